package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows on stderr which run is going and how far it is: on a
// terminal one line redrawn four times a second, otherwise one line when
// each run starts and ends.
type progress struct {
	w     io.Writer
	tty   bool
	total int

	mu    sync.Mutex
	index int
	label string
	start time.Time
	plan  time.Duration
	ops   atomic.Int64

	stop chan struct{}
	done chan struct{}
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	go p.loop()
	return p
}

// begin announces run label, expected to take about plan.
func (p *progress) begin(label string, plan time.Duration) {
	p.mu.Lock()
	p.index++
	p.label, p.start, p.plan = label, time.Now(), plan
	p.ops.Store(0)
	p.mu.Unlock()
	if !p.tty {
		fmt.Fprintf(p.w, "[%d/%d] %s ...\n", p.index, p.total, label)
	}
}

// setOps records the operations measured so far in the current run (any
// goroutine).
func (p *progress) setOps(n int64) { p.ops.Store(n) }

// end reports the current run's outcome.
func (p *progress) end(outcome string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "[%d/%d] %s: %s\n", p.index, p.total, p.label, outcome)
}

// note prints a message on a line of its own.
func (p *progress) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		if !p.tty {
			continue
		}
		p.mu.Lock()
		if p.label != "" {
			el := time.Since(p.start).Truncate(100 * time.Millisecond)
			ops := ""
			if n := p.ops.Load(); n > 0 {
				ops = fmt.Sprintf("%d ops, ", n)
			}
			fmt.Fprintf(p.w, "\r\033[K[%d/%d] %s: %s%v of ~%v", p.index, p.total, p.label, ops, el, p.plan)
		}
		p.mu.Unlock()
	}
}

// close stops the display.
func (p *progress) close() {
	close(p.stop)
	<-p.done
}

package peers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Load is how Drive loads the server: Workers goroutines, each calling Op
// in a loop; for Warmup first without measuring, then for Duration (or,
// with Ops > 0, until each worker has done Ops operations).
type Load struct {
	Workers          int
	Warmup, Duration time.Duration
	Ops              int
	// Op does one operation as worker w. It is called from worker w's
	// goroutine only.
	Op func(ctx context.Context, w int) error
	// Done, if set, is called with the count of measured operations after
	// each one, from any worker's goroutine (for a progress display).
	Done func(total int64)
	// MaxErrors stops a worker whose operations failed this many times
	// in a row (default 100): a server that is down ends the run with an
	// error, not a spin.
	MaxErrors int
}

// ErrTooManyErrors is returned by Drive when a worker's operations kept
// failing.
var ErrTooManyErrors = errors.New("peers: operations keep failing")

// Drive runs l and returns what it measured (Impl, Scenario and Clients
// are left for the caller). Ops counts operations that started after the
// warm-up and ended without error; Seconds runs from the end of the
// warm-up until the last worker stopped. Time is the wall clock: this
// measures it.
func Drive(ctx context.Context, l Load) (Result, error) {
	if l.Workers < 1 || l.Op == nil || l.Warmup < 0 || l.Duration < 0 || l.Ops < 0 || (l.Duration == 0 && l.Ops == 0) {
		return Result{}, fmt.Errorf("%w: load of %d workers, op set %t, warmup %v, duration %v, ops %d",
			ErrBadParams, l.Workers, l.Op != nil, l.Warmup, l.Duration, l.Ops)
	}
	if l.MaxErrors <= 0 {
		l.MaxErrors = 100
	}
	start := time.Now()
	t0 := start.Add(l.Warmup)
	var end time.Time
	if l.Duration > 0 {
		end = t0.Add(l.Duration)
	}
	var (
		wg    sync.WaitGroup
		total atomic.Int64
		all   atomic.Int64
		nerr  atomic.Int64
		lats  = make([][]time.Duration, l.Workers)
		errs  = make([]error, l.Workers)
	)
	for w := range l.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, fails := 0, 0
			for ctx.Err() == nil {
				s := time.Now()
				if !end.IsZero() && !s.Before(end) {
					return
				}
				err := l.Op(ctx, w)
				e := time.Now()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					nerr.Add(1)
					if fails++; fails >= l.MaxErrors {
						errs[w] = fmt.Errorf("%w: worker %d: %d in a row, the last: %w", ErrTooManyErrors, w, fails, err)
						return
					}
					continue
				}
				fails = 0
				all.Add(1)
				if s.Before(t0) {
					continue
				}
				lats[w] = append(lats[w], e.Sub(s))
				n := total.Add(1)
				if l.Done != nil {
					l.Done(n)
				}
				if done++; l.Ops > 0 && done >= l.Ops {
					return
				}
			}
		}()
	}
	// The CPU window opens at t0 (or when every worker has stopped, if
	// that is earlier) and closes when the last worker stopped.
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	cpu0 := cpuAt(t0, stopped)
	<-stopped
	stop := time.Now()
	cpu := ProcessCPU() - cpu0
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var lat []time.Duration
	for _, l := range lats {
		lat = append(lat, l...)
	}
	secs := stop.Sub(t0).Seconds()
	if secs < 0 {
		secs = 0
	}
	return Result{Ops: int64(len(lat)), Total: all.Load(), Errors: nerr.Load(), Seconds: secs, Latency: Summarize(lat), CPU: max(cpu, 0)}, nil
}

// cpuAt reads ProcessCPU at t, or when done closes if that is earlier.
func cpuAt(t time.Time, done <-chan struct{}) time.Duration {
	if wait := time.Until(t); wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-done:
		}
		timer.Stop()
	}
	return ProcessCPU()
}

package zkadapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// recorder collects everything a Conn delivers, in delivery order, and
// checks that no two callbacks ever run at the same time.
type recorder struct {
	mu      sync.Mutex
	log     []string
	events  []task.Event
	changed chan struct{}
	busy    bool
	overlap bool
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) enter() {
	r.mu.Lock()
	if r.busy {
		r.overlap = true
	}
	r.busy = true
	r.mu.Unlock()
}

func (r *recorder) leave(line string, ev *task.Event) {
	r.mu.Lock()
	r.busy = false
	r.log = append(r.log, line)
	if ev != nil {
		r.events = append(r.events, *ev)
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) onEvent(ev task.Event) {
	r.enter()
	r.leave("event "+ev.String(), &ev)
}

// sessionEvents returns the session events so far.
func (r *recorder) sessionEvents() []task.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]task.Event(nil), r.events...)
}

// waitState waits for the n-th (1-based, counting from 1) session event
// with state st after index from; it returns the event and its index.
func (r *recorder) waitState(t *testing.T, from int, st task.State, d time.Duration) (task.Event, int) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		evs := r.sessionEvents()
		for i := from; i < len(evs); i++ {
			if evs[i].State == st {
				return evs[i], i
			}
		}
		select {
		case <-r.changed:
		case <-deadline.C:
			t.Fatalf("no session event %s after index %d within %s; events: %v", st, from, d, evs)
		}
	}
}

func (r *recorder) checkNoOverlap(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overlap {
		t.Error("two callbacks ran at the same time")
	}
}

// watcher is a watch callback that records its calls.
type watcher struct {
	r  *recorder
	ch chan task.Event // capacity 2: a second call would be a bug and is seen
}

func (r *recorder) watcher() *watcher { return &watcher{r: r, ch: make(chan task.Event, 2)} }

func (w *watcher) fn(ev task.Event) {
	w.r.enter()
	w.ch <- ev
	w.r.leave("watch "+ev.String(), nil)
}

func (w *watcher) wait(t *testing.T, d time.Duration) task.Event {
	t.Helper()
	select {
	case ev := <-w.ch:
		return ev
	case <-time.After(d):
		t.Fatalf("watch did not fire within %s", d)
	}
	panic("unreachable")
}

func (w *watcher) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-w.ch:
		t.Fatalf("watch fired unexpectedly: %v", ev)
	default:
	}
}

// do sends req and waits for its completion.
func do(t *testing.T, c *Conn, r *recorder, req task.Request, w *watcher) task.Response {
	t.Helper()
	ch := doAsync(c, r, req, w)
	select {
	case resp := <-ch:
		return resp
	case <-time.After(20 * time.Second):
		t.Fatalf("%s %s: no completion", req.OpName(), req.NodePath())
	}
	panic("unreachable")
}

func doAsync(c *Conn, r *recorder, req task.Request, w *watcher) <-chan task.Response {
	ch := make(chan task.Response, 2)
	var wfn func(task.Event)
	if w != nil {
		wfn = w.fn
	}
	c.Do(req, func(resp task.Response) {
		r.enter()
		ch <- resp
		r.leave(fmt.Sprintf("done %s %s: %v", req.OpName(), req.NodePath(), resp.Err), nil)
	}, wfn)
	return ch
}

func mustOK(t *testing.T, resp task.Response) task.Response {
	t.Helper()
	if resp.Err != nil {
		t.Fatalf("unexpected error: %v", resp.Err)
	}
	return resp
}

func mustErr(t *testing.T, resp task.Response, want error) {
	t.Helper()
	if (resp.Err == nil) != (want == nil) || !errors.Is(resp.Err, want) {
		t.Fatalf("error = %v, want %v", resp.Err, want)
	}
}

// testLogger logs to t when -v is given.
func testLogger(t *testing.T) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// open dials cfg, starts the Conn with a recorder and closes it at the end.
func open(t *testing.T, cfg Config) (*Conn, *recorder) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	if err := c.Start(r.onEvent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		r.checkNoOverlap(t)
	})
	return c, r
}

// serverOpts are fast servers whose session timeouts tests choose freely.
var serverOpts = zkserver.Options{
	TickTime:          100 * time.Millisecond,
	MinSessionTimeout: 200 * time.Millisecond,
	MaxSessionTimeout: 30 * time.Second,
}

// partitioner is a Dialer whose connections can be cut and whose dials
// can be refused: a client partitioned from every server.
type partitioner struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (p *partitioner) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return nil, fmt.Errorf("partitioned from %s", addr)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err == nil {
		p.conns = append(p.conns, nc)
	}
	return nc, err
}

func (p *partitioner) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, nc := range p.conns {
		nc.Close()
	}
	p.conns = nil
}

func (p *partitioner) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// restartHeld restarts the stopped standalone server srv while p refuses
// the client's dials, and lets them through once it serves: a connection
// made while ZooKeeper 3.8 starts is never answered (see
// zkserver.Cluster.Restart), and the client's handshake bound, not the
// resumption these tests check, would decide when it reconnects
// (TestBlackHoleStandaloneSwallowedHandshake checks that bound).
func restartHeld(t *testing.T, srv *zkserver.Cluster, p *partitioner) {
	t.Helper()
	p.partition()
	defer p.heal()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
}

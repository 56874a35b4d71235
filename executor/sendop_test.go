package executor_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// holdConn is a Conn that holds every request until the test completes
// it, in any order.
type holdConn struct {
	mu     sync.Mutex
	events func(task.Event)
	held   []held
}

type held struct {
	req   task.Request
	done  func(task.Response)
	watch func(task.Event)
}

func (c *holdConn) Start(events func(task.Event)) error {
	c.events = events
	events(task.Event{Type: task.EventNone, State: task.StateConnected, SessionID: 1})
	return nil
}

func (c *holdConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = append(c.held, held{req, done, watch})
}

func (c *holdConn) Close() error {
	c.mu.Lock()
	h := c.held
	c.held = nil
	c.mu.Unlock()
	for _, r := range h {
		r.done(task.Response{Err: task.ErrClosed})
	}
	c.events(task.Event{Type: task.EventNone, State: task.StateClosed})
	return nil
}

// complete answers the held request at index i (the response's Path
// echoes the request's) and forgets it; it returns the request's watch
// function (nil if it set none).
func (c *holdConn) complete(i int) func(task.Event) {
	c.mu.Lock()
	r := c.held[i]
	c.held = append(c.held[:i], c.held[i+1:]...)
	c.mu.Unlock()
	r.done(task.Response{Path: r.req.NodePath()})
	return r.watch
}

// Requests in flight together, answered out of order, with new requests
// sent between the answers (so that they reuse what the answered ones
// held): every flow gets the response to its own request, once. The
// executor, observed and not, recycles per-request state; a recycling
// that let a request's state go before its outcome reached the flow would
// hand one flow another's response.
func TestOutOfOrderOutcomesReachTheirFlows(t *testing.T) {
	for _, observed := range []bool{false, true} {
		t.Run(fmt.Sprintf("observed=%v", observed), func(t *testing.T) {
			var obs *task.Observer
			if observed {
				obs = &task.Observer{OnOpEnd: func(task.OpDone) {}}
			}
			conn := &holdConn{}
			ex, err := executor.New(executor.Config{Conn: conn, Seed: 1, Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Shutdown()
			got := map[string]int{}
			send := func(path string) {
				executor.Submit(ex, task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
					task.Exec(s, &task.GetDataRequest{Path: path}, func(r task.Response, err error) {
						if err != nil || r.Path != path {
							t.Errorf("get %s: got the response for %q, %v", path, r.Path, err)
						}
						got[path]++
						k(task.Unit{}, nil)
					})
				}), func(task.Unit, error) {})
			}
			n := 0
			for round := 0; round < 5; round++ {
				// The round's flows are submitted, then the newest half
				// of the held requests answered (last first): the flows
				// send their requests before the executor hands those
				// outcomes on.
				for i := 0; i < 5; i++ {
					send(fmt.Sprintf("/r%d-%d", round, i))
					n++
				}
				for i := len(conn.held) - 1; i >= len(conn.held)/2; i-- {
					conn.complete(i)
				}
				ex.RunUntilIdle()
			}
			for len(conn.held) > 0 {
				conn.complete(len(conn.held) / 2)
				ex.RunUntilIdle()
			}
			if len(got) != n {
				t.Fatalf("%d flows got a response, want %d", len(got), n)
			}
			for p, c := range got {
				if c != 1 {
					t.Errorf("flow of %s resumed %d times", p, c)
				}
			}
		})
	}
}

// One-time watches set by requests in flight together, answered and fired
// out of order, with new watched requests sent between the answers and
// the notifications, and a persistent watch that fires between them all:
// every Watch gets the notification of its own path, once, and the
// persistent watch gets every one of its own. The executor recycles a
// request's state once the Conn is done with it; recycling it at its
// outcome, before its watch has fired, would hand one Watch another's
// notification.
func TestWatchNoticesReachTheirWatches(t *testing.T) {
	conn := &holdConn{}
	ex, err := executor.New(executor.Config{Conn: conn, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()

	var pw *task.PersistentWatch
	executor.Submit(ex, task.AddWatch("/p", task.WatchPersistent), func(w *task.PersistentWatch, err error) {
		if err != nil {
			t.Fatal(err)
		}
		pw = w
	})
	ex.RunUntilIdle()
	pfire := conn.complete(0)
	ex.RunUntilIdle()
	if pw == nil || pfire == nil {
		t.Fatal("no persistent watch set")
	}
	var pgot []string
	var next func()
	next = func() {
		executor.Submit(ex, pw.Next(), func(ev task.Event, err error) {
			if err != nil {
				if !errors.Is(err, task.ErrClosed) { // the Shutdown at the end
					t.Errorf("persistent watch: %v", err)
				}
				return
			}
			pgot = append(pgot, ev.Path)
			next()
		})
	}
	next()

	got := map[string]int{}
	send := func(path string) {
		executor.Submit(ex, task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
			task.Run(s, task.ExistsW(path), func(sw task.StatWatch, err error) {
				if err != nil {
					k(task.Unit{}, err)
					return
				}
				task.Run(s, sw.Watch.Wait(), func(ev task.Event, err error) {
					if err != nil || ev.Path != path {
						t.Errorf("watch of %s: got the notification for %q, %v", path, ev.Path, err)
					}
					got[path]++
					k(task.Unit{}, nil)
				})
			})
		}), func(task.Unit, error) {})
	}
	var fires []func(task.Event)
	var paths []string
	n, pn := 0, 0
	for round := 0; round < 5; round++ {
		for i := 0; i < 4; i++ {
			send(fmt.Sprintf("/r%d-%d", round, i))
			n++
		}
		// Answer the newest half of the held requests, last first; fire
		// the oldest half of the watches set, and the persistent watch,
		// before the executor runs the round's flows.
		for i := len(conn.held) - 1; i >= len(conn.held)/2; i-- {
			paths = append(paths, conn.held[i].req.NodePath())
			fires = append(fires, conn.complete(i))
		}
		for i := 0; i < len(fires)/2; i++ {
			fires[i](task.Event{Type: task.EventNodeDataChanged, Path: paths[i]})
		}
		fires, paths = fires[len(fires)/2:], paths[len(paths)/2:]
		pfire(task.Event{Type: task.EventNodeDataChanged, Path: fmt.Sprintf("/p/%d", round)})
		pn++
		ex.RunUntilIdle()
	}
	for len(conn.held) > 0 {
		paths = append(paths, conn.held[0].req.NodePath())
		fires = append(fires, conn.complete(0))
	}
	for i := len(fires) - 1; i >= 0; i-- {
		fires[i](task.Event{Type: task.EventNodeDataChanged, Path: paths[i]})
		ex.RunUntilIdle()
	}
	if len(got) != n {
		t.Fatalf("%d watches notified, want %d", len(got), n)
	}
	for p, c := range got {
		if c != 1 {
			t.Errorf("watch of %s notified %d times", p, c)
		}
	}
	if len(pgot) != pn {
		t.Fatalf("persistent watch got %v, want %d events", pgot, pn)
	}
	for i, p := range pgot {
		if want := fmt.Sprintf("/p/%d", i); p != want {
			t.Errorf("persistent watch event %d for %s, want %s", i, p, want)
		}
	}
}

// echoConn answers every request at once, in Do (which the Conn contract
// allows), and sets no watch.
type echoConn struct{ events func(task.Event) }

func (c *echoConn) Start(events func(task.Event)) error {
	c.events = events
	events(task.Event{Type: task.EventNone, State: task.StateConnected, SessionID: 1})
	return nil
}

func (c *echoConn) Do(req task.Request, done func(task.Response), _ func(task.Event)) {
	done(task.Response{Path: req.NodePath()})
}

func (c *echoConn) Close() error {
	c.events(task.Event{Type: task.EventNone, State: task.StateClosed})
	return nil
}

// A request sent from a running step and answered costs the executor and
// the task package no allocation once their per-request records have
// been made: the executor's op and the task's wait are reused, the
// outcome travels through the inbox and the task queue by value. Observed
// or not.
func TestSendAllocs(t *testing.T) {
	for _, observed := range []bool{false, true} {
		t.Run(fmt.Sprintf("observed=%v", observed), func(t *testing.T) {
			var obs *task.Observer
			if observed {
				obs = &task.Observer{OnOpEnd: func(task.OpDone) {}}
			}
			ex, err := executor.New(executor.Config{Conn: &echoConn{}, Seed: 1, Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Shutdown()
			ex.RunUntilIdle()
			s := ex.SessionScope()
			req := &task.GetDataRequest{Path: "/a"}
			n := 0
			k := func(r task.Response, err error) {
				if err != nil || r.Path != "/a" {
					t.Fatalf("got %q, %v", r.Path, err)
				}
				n++
			}
			allocs := testing.AllocsPerRun(100, func() {
				task.Exec(s, req, k)
				ex.RunUntilIdle()
			})
			if allocs > 0 {
				t.Errorf("a request sent and answered: %v allocations, want 0", allocs)
			}
			if n != 101 {
				t.Errorf("%d outcomes, want 101", n)
			}
		})
	}
}

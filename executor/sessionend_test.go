package executor_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// onFake is an executor on a deterministic fakezk server, driven by hand.
type onFake struct {
	srv  *fakezk.Server
	conn *fakezk.Conn
	ex   *executor.Executor
}

func newOnFake(t *testing.T) *onFake {
	t.Helper()
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Seed: 5, Clock: clk, Deterministic: true})
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Shutdown(); srv.Close() })
	f := &onFake{srv: srv, conn: conn, ex: ex}
	f.drive()
	return f
}

func (f *onFake) drive() {
	for f.ex.RunUntilIdle()+f.srv.RunUntilIdle() > 0 {
	}
}

// handle stands for a recipe's handle (a lock, a leadership): it learns
// that its session ended from the session events it subscribes to, as the
// recipes do, and reports it in Err.
type handle struct{ err error }

func (h *handle) onSession(ev task.Event) {
	if ev.Type != task.EventNone || h.err != nil {
		return
	}
	switch ev.State {
	case task.StateExpired:
		h.err = task.ErrSessionExpired
	case task.StateClosed:
		h.err = task.ErrClosed
	}
}

// sessionEndCase sets up flows waiting on the session, ends the session
// with end, and checks that every continuation of the ended session ran
// after every subscriber had heard the end: inside each, every handle
// reports it.
func sessionEndCase(t *testing.T, end func(f *onFake), want error) {
	f := newOnFake(t)
	var handles []*handle
	var saw []error // Err of the last handle, from inside each continuation
	var ended []error
	check := func(_ task.Event, err error) {
		ended = append(ended, err)
		for i, h := range handles {
			if h.err == nil {
				t.Errorf("a continuation of the ended session ran before handle %d heard the end (continuation got %v)", i, err)
			}
		}
		saw = append(saw, handles[len(handles)-1].err)
	}
	var victim *task.Scope
	var parked task.Cont[task.Event]
	setup := task.Func(func(s *task.Scope) (task.Unit, error) {
		// A subscriber that, hearing the end, cancels a scope of the
		// ended session and resumes a wait of it: neither may run a
		// continuation before the handles below have heard.
		s.Subscribe(func(ev task.Event) {
			if ev.Type == task.EventNone && ev.State != task.StateConnected && ev.State != task.StateSuspended {
				victim.Cancel(errors.New("canceled by a subscriber"))
				if parked != nil {
					parked(task.Event{}, nil)
				}
			}
		})
		for range 3 {
			h := &handle{}
			handles = append(handles, h)
			s.Subscribe(h.onSession)
		}
		return task.Unit{}, nil
	})
	executor.Submit(f.ex, setup, func(_ task.Unit, err error) {
		if err != nil {
			t.Errorf("setup: %v", err)
		}
	})
	executor.Submit(f.ex, task.Create("/n", nil, task.Persistent), nil)
	f.drive()
	// Flows parked in three ways: on a watch, in a child scope that a
	// subscriber cancels, and in a wait that a subscriber resumes.
	executor.Submit(f.ex, c.Then(task.ExistsW("/n"), func(sw task.StatWatch) task.Task[task.Event] { return sw.Watch.Wait() }), check)
	executor.Submit(f.ex, task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
		victim = s.Child()
		task.RunIn(victim, c.Then(task.ExistsW("/n"), func(sw task.StatWatch) task.Task[task.Event] { return sw.Watch.Wait() }), k)
	}), check)
	executor.Submit(f.ex, task.Task[task.Event](func(s *task.Scope, k task.Cont[task.Event]) {
		task.Suspend(s, k, func(resume task.Cont[task.Event]) func() {
			parked = resume
			return nil
		})
	}), check)
	f.drive()
	if len(ended) != 0 {
		t.Fatalf("flows ended before the session did: %v", ended)
	}
	end(f)
	f.drive()
	if len(ended) != 3 {
		t.Fatalf("%d of 3 flows ended after the session did: %v", len(ended), ended)
	}
	for _, err := range ended {
		if !errors.Is(err, want) {
			t.Errorf("a flow ended with %v, want %v", err, want)
		}
	}
	for _, err := range saw {
		if !errors.Is(err, want) {
			t.Errorf("a handle reported %v inside a continuation, want %v", err, want)
		}
	}
}

// A flow cut by session expiry gets its continuation after every session
// subscriber has heard Expired, so a handle's Err is already set in it.
func TestSubscribersHearExpiryBeforeContinuations(t *testing.T) {
	sessionEndCase(t, func(f *onFake) { f.srv.Expire(f.conn) }, task.ErrSessionExpired)
}

// The same when the executor closes: subscribers hear StateClosed before
// any flow gets task.ErrClosed.
func TestSubscribersHearCloseBeforeContinuations(t *testing.T) {
	sessionEndCase(t, func(f *onFake) { f.ex.Shutdown() }, task.ErrClosed)
}

// A new session id with no Expired before it is expiry: subscribers hear
// Expired (for the old session) and then Connected, and the old session's
// flows get their continuations in between.
func TestSilentSwitchPublishesExpiry(t *testing.T) {
	r := rig.New(t)
	h := &handle{}
	var heard []string
	executor.Submit(r.Ex, task.Func(func(s *task.Scope) (task.Unit, error) {
		s.Subscribe(h.onSession)
		s.Subscribe(func(ev task.Event) { heard = append(heard, fmt.Sprintf("%v %d", ev.State, ev.SessionID)) })
		return task.Unit{}, nil
	}), nil)
	var sawErr, got error
	executor.Submit(r.Ex, task.Get("/a"), func(_ task.Data, err error) {
		got, sawErr = err, h.err
		heard = append(heard, "continuation")
	})
	r.Idle()
	r.Conn.Connect(99)
	r.Idle()
	if !errors.Is(got, task.ErrSessionExpired) || !errors.Is(sawErr, task.ErrSessionExpired) {
		t.Fatalf("flow got %v, and the handle said %v inside its continuation", got, sawErr)
	}
	want := []string{"Expired 1", "continuation", "Connected 99"}
	if fmt.Sprint(heard) != fmt.Sprint(want) {
		t.Fatalf("heard %q, want %q", heard, want)
	}
}

// Shutdown publishes the end of the session once: the Closed that the
// connection reports when the executor closes it changes nothing more.
func TestShutdownPublishesClosedOnce(t *testing.T) {
	r := rig.New(t)
	var heard []task.State
	executor.Submit(r.Ex, task.Func(func(s *task.Scope) (task.Unit, error) {
		s.Subscribe(func(ev task.Event) { heard = append(heard, ev.State) })
		return task.Unit{}, nil
	}), nil)
	r.Idle()
	r.Ex.Shutdown()
	if len(heard) != 1 || heard[0] != task.StateClosed {
		t.Fatalf("subscriber heard %v, want one Closed", heard)
	}
	if _, st := r.Ex.Current(); st != task.StateClosed {
		t.Fatalf("state after Shutdown = %v", st)
	}
}

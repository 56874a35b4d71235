package task

import (
	"errors"
	"testing"
)

// sendRuntime is stubRuntime with a connection that holds every request's
// Receiver until the test hands it an outcome.
type sendRuntime struct {
	stubRuntime
	sent []Receiver
}

func (r *sendRuntime) Send(_ Request, rcv Receiver, _ Watcher) { r.sent = append(r.sent, rcv) }

func newSendRoot() (*sendRuntime, *Scope) {
	rt := &sendRuntime{}
	rt.root = NewSessionScope(rt, &Session{ID: 1, Epoch: 1})
	return rt, rt.root
}

// take returns the oldest held Receiver and forgets it.
func (r *sendRuntime) take() Receiver {
	rcv := r.sent[0]
	r.sent = r.sent[1:]
	return rcv
}

// A request's wait is reused only once both its outcome has come and it
// has left its scope, whichever comes first: a wait abandoned before its
// outcome, one whose outcome comes while the abandonment is on its way
// (CancelDeferred, then the outcome, then Deliver), and one resumed by its
// outcome each go back once; were one given back twice, two later
// requests would share it.
func TestSendWaitReuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(rt *sendRuntime, s *Scope)
		want error
	}{
		{"resumed", func(rt *sendRuntime, s *Scope) {
			rt.take().Receive(Response{Path: "/a"})
		}, nil},
		{"abandoned, then outcome", func(rt *sendRuntime, s *Scope) {
			s.Cancel(nil)
			rt.take().Receive(Response{Path: "/a"})
		}, ErrCanceled},
		{"outcome while abandoning", func(rt *sendRuntime, s *Scope) {
			d := s.CancelDeferred(ErrCanceled)
			rt.take().Receive(Response{Path: "/a"})
			d.Deliver()
		}, ErrCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, root := newSendRoot()
			s := root.Child()
			var calls []error
			Exec(s, &GetDataRequest{Path: "/a"}, func(r Response, err error) {
				if err == nil && r.Path != "/a" {
					t.Errorf("resumed with the response for %q", r.Path)
				}
				calls = append(calls, err)
			})
			tc.end(rt, s)
			if len(calls) != 1 || !errors.Is(calls[0], tc.want) {
				t.Fatalf("continuation called with %v, want once with %v", calls, tc.want)
			}
			s.Close()
			// Two requests in flight together: two waits.
			var got [2]string
			for i, p := range []string{"/b", "/c"} {
				Exec(root, &GetDataRequest{Path: p}, func(r Response, err error) {
					if err != nil {
						t.Errorf("%s: %v", p, err)
					}
					got[i] = r.Path
				})
			}
			if rt.sent[0] == rt.sent[1] {
				t.Fatal("two requests in flight share one wait")
			}
			rt.sent[1].Receive(Response{Path: "/c"})
			rt.sent[0].Receive(Response{Path: "/b"})
			if got != [2]string{"/b", "/c"} {
				t.Fatalf("responses reached %v, want [/b /c]", got)
			}
		})
	}
}

// A request sent and answered allocates nothing once a wait has been
// freed: the wait is reused.
func TestSendWaitAllocs(t *testing.T) {
	rt, root := newSendRoot()
	req := &GetDataRequest{Path: "/a"}
	n := 0
	k := func(Response, error) { n++ }
	allocs := testing.AllocsPerRun(100, func() {
		Exec(root, req, k)
		rcv := rt.sent[0]
		rt.sent = rt.sent[:0]
		rcv.Receive(Response{})
	})
	if allocs > 0 {
		t.Errorf("a request sent and answered: %v allocations, want 0", allocs)
	}
	if n != 101 {
		t.Errorf("%d continuations ran, want 101", n)
	}
}

// An operation task runs its request as Run runs a task: at once while
// the stack is shallow, through the task queue once maxDepth calls are
// nested, and not at all in an ended scope (the scope's error instead).
func TestOpTaskRunsAsRun(t *testing.T) {
	rt, root := newSendRoot()
	var got []error
	k := func(_ Data, err error) { got = append(got, err) }

	Run(root, Get("/a"), k)
	if len(rt.sent) != 1 || len(rt.queue) != 0 {
		t.Fatalf("shallow: %d sent, %d scheduled, want 1 sent at once", len(rt.sent), len(rt.queue))
	}
	rt.take().Receive(Response{})

	*root.depth = maxDepth
	Get("/a")(root, k)
	if len(rt.sent) != 0 || len(rt.queue) != 1 {
		t.Fatalf("deep: %d sent, %d scheduled, want it scheduled", len(rt.sent), len(rt.queue))
	}
	rt.drain()
	if len(rt.sent) != 1 {
		t.Fatalf("deep: %d sent after the queue ran, want 1", len(rt.sent))
	}
	rt.take().Receive(Response{})

	ended := root.Child()
	ended.Cancel(nil)
	Get("/a")(ended, k)
	ended.Close()
	if len(rt.sent) != 0 {
		t.Fatal("an ended scope sent its request")
	}
	if len(got) != 3 || got[0] != nil || got[1] != nil || !errors.Is(got[2], ErrCanceled) {
		t.Fatalf("outcomes %v, want nil, nil, ErrCanceled", got)
	}
}

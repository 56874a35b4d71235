package election_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// cutAfterRead cuts its client off (its session lives on, nothing in
// flight applied) right after the reply to a plain exists of path has been
// handed to it, once armed: the reply is in, its continuation not yet run.
type cutAfterRead struct {
	*fakezk.Conn
	w     *sim.World
	match func(path string) bool
	armed bool
	cut   bool
}

func (c *cutAfterRead) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if r, ok := req.(*task.ExistsRequest); ok && watch == nil && c.armed && !c.cut && c.match(r.Path) {
		inner := done
		done = func(resp task.Response) {
			inner(resp)
			if !c.cut {
				c.cut = true
				// longer than the give-up time, shorter than the session
				c.w.Server.Partition(c.Conn, c.w.Timeout()/2, false)
			}
		}
	}
	c.Conn.Do(req, done, watch)
}

// A candidate's ownership read is answered, then its connection drops
// before the grant runs, for longer than its give-up time. Meanwhile an
// operator deletes its node and another candidate leads. When the
// connection comes back, the grant must not go ahead on the read made
// before the suspension: it reads again.
func TestNoGrantOnReadBeforeSuspension(t *testing.T) {
	for _, kind := range []string{"election", "master"} {
		t.Run(kind, func(t *testing.T) {
			var cut *cutAfterRead
			w, err := sim.New(sim.Config{Seed: 1, Clients: 3, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
				if i == 0 {
					cut = &cutAfterRead{Conn: conn}
					return cut
				}
				return conn
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Close)
			cut.w = w
			var cand func() election.Candidate
			node := func() string { return "/svc/master" }
			if kind == "master" {
				cand = func() election.Candidate { return mustMaster(t, "/svc/master", "x") }
				cut.match = func(p string) bool { return p == "/svc/master" }
			} else {
				cand = func() election.Candidate { return mustElection(t, "/svc/el") }
				cut.match = func(p string) bool { return len(p) > len("/svc/el/") && p[:len("/svc/el/")] == "/svc/el/" }
				node = func() string {
					ch := w.Children("/svc/el")
					if len(ch) == 0 {
						return ""
					}
					return "/svc/el/" + ch[0]
				}
			}
			cut.armed = true
			o0 := sim.Submit(w, 0, cand().Campaign())
			if !w.Settle(func() bool { return cut.cut }) {
				t.Fatal("the ownership read was never answered")
			}
			// While client 0 is cut off: an operator deletes its node, and
			// client 1 campaigns and leads.
			p := node()
			if p == "" {
				t.Fatal("no candidate node")
			}
			if _, err := mustRun(t, w, 2, task.Delete(p, task.AnyVersion)); err != nil {
				t.Fatal(err)
			}
			o1 := sim.Submit(w, 1, cand().Campaign())
			if !w.Settle(func() bool { return o1.Done }) || o1.Err != nil {
				t.Fatalf("client 1 never led: %v", o1.Err)
			}
			w.Settle(func() bool { return o0.Done })
			if o0.Done && o0.Err == nil {
				t.Fatalf("client 0 was granted leadership (token %d) on a read made before its suspension, while client 1 leads (token %d)",
					o0.V.Token(), o1.V.Token())
			}
		})
	}
}

// holdQueueReads holds, once armed, the requests its client sends after
// its candidate's create (the sync, listing and read of the queue) until
// release forwards them, in order.
type holdQueueReads struct {
	*fakezk.Conn
	armed bool
	held  []func()
}

func (c *holdQueueReads) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if _, create := req.(*task.CreateRequest); c.armed && !create {
		c.held = append(c.held, func() { c.Conn.Do(req, done, watch) })
		return
	}
	c.Conn.Do(req, done, watch)
}

func (c *holdQueueReads) release() {
	c.armed = false
	for _, f := range c.held {
		f()
	}
	c.held = nil
}

// staleGrant runs a candidate whose queue is read from a member that
// lags behind the leader: after its create, and before its sync, listing
// and read reach the server, an operator deletes its node and another
// candidate leads; then its member lags, its view back at its create. It
// reports the first candidate's leadership, if it was granted, with the
// one of the candidate that leads.
func staleGrant(t *testing.T) (stale, leader *election.Leadership) {
	t.Helper()
	var hold *holdQueueReads
	w, err := sim.New(sim.Config{Seed: 1, Clients: 3, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			hold = &holdQueueReads{Conn: conn, armed: true}
			return hold
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.Server.KeepHistory()
	if _, err := mustRun(t, w, 2, zkops.EnsurePath("/svc/el", nil)); err != nil {
		t.Fatal(err)
	}
	o0 := sim.Submit(w, 0, mustElection(t, "/svc/el").Campaign())
	if !w.Settle(func() bool { return len(hold.held) > 0 }) {
		t.Fatal("the candidate never read its queue")
	}
	ch := w.Children("/svc/el")
	if len(ch) != 1 {
		t.Fatalf("candidates %v, want client 0's alone", ch)
	}
	if _, err := mustRun(t, w, 2, task.Delete("/svc/el/"+ch[0], task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	l1, err := mustRun(t, w, 1, mustElection(t, "/svc/el").Campaign())
	if err != nil {
		t.Fatalf("client 1 never led: %v", err)
	}
	w.Server.LagHeld(w.Conns[0], time.Hour)
	if lagging, _ := w.Conns[0].Lagging(); !lagging {
		t.Fatal("client 0's member does not lag")
	}
	hold.release()
	if !w.Settle(func() bool { return o0.Done }) {
		t.Fatal("client 0's campaign never ended")
	}
	if o0.Err == nil {
		return o0.V, l1
	}
	if !errors.Is(o0.Err, election.ErrLost) {
		t.Fatalf("client 0's campaign: %v, want ErrLost (its node is gone)", o0.Err)
	}
	return nil, l1
}

// The sync sent before the listing and the read of our node (all three
// at once) catches a lagging member up: a candidate whose node was
// deleted while its member lags is not granted leadership beside the
// leader; it fails with ErrLost.
func TestNoGrantOnStaleQueueRead(t *testing.T) {
	if stale, leader := staleGrant(t); stale != nil {
		t.Fatalf("client 0 was granted leadership (token %d) on a stale read, while client 1 leads (token %d)", stale.Token(), leader.Token())
	}
}

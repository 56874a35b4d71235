package election_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
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

package election_test

// Adversarial tests, round 5: each tries a promise of the package's docs
// on a schedule built for it.

import (
	"runtime"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// dropAfterMulti loses the connection (the session lives on) right after
// the next multi is handed to the server, once armed: its reply is lost.
type dropAfterMulti struct {
	*fakezk.Conn
	srv     *fakezk.Server
	armed   bool
	applied bool
}

func (c *dropAfterMulti) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if _, ok := req.(*task.MultiRequest); ok && c.armed {
		c.armed = false
		c.srv.Drop(c.Conn, c.applied)
	}
}

// PROTOCOL.md, Master protocol, step 2: "Owned by our session: read our
// lease; ... If our create's outcome was unknown and the lease does not
// vouch for the node (someone removed or replaced it), delete the node
// (that incarnation only) and go to 1 ... Anyone else's (another
// campaign's, even on our session): wait for the watch, then go to 1."
// And the package doc: the methods of Client are safe from any goroutine.
//
// Two campaigns of one Master on one session (two goroutines calling
// Campaign on one Client): Y is master; X's multi (refused with
// NodeExists, or never applied) loses its reply. X finds the master node
// owned by its session and its own lease missing, takes the node for one
// its multi made, and deletes it: Y, which nobody outside touched, loses
// its leadership ("node deleted"), and X becomes master in its place.
func TestAdv5MasterSiblingCampaignDeletesLeader(t *testing.T) {
	for _, applied := range []bool{true, false} {
		name := "not-applied"
		if applied {
			name = "applied"
		}
		t.Run(name, func(t *testing.T) {
			var drop *dropAfterMulti
			w, err := sim.New(sim.Config{Seed: 5, Clients: 1, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
				drop = &dropAfterMulti{Conn: conn, applied: applied}
				return drop
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Close)
			drop.srv = w.Server
			m := mustMaster(t, "/svc/master", "x")
			ly, err := mustRun(t, w, 0, m.Campaign()) // Y
			if err != nil {
				t.Fatal(err)
			}
			drop.armed = true
			ox := sim.Submit(w, 0, m.Campaign()) // X, on the same session
			w.Settle(func() bool { return ox.Done || ly.Err() != nil })
			if err := ly.Err(); err != nil {
				t.Errorf("Y, master, lost its leadership to a sibling campaign on its session: %v", err)
			}
			if ox.Done && ox.Err == nil {
				t.Errorf("X became master (token %d) by deleting Y's node (token %d)", ox.V.Token(), ly.Token())
			}
		})
	}
}

// endOnRead ends a context (cancel) when the reply to a read of a child
// of dir is delivered to its client, once armed; and counts the listings
// of dir the client sends.
type endOnRead struct {
	*fakezk.Conn
	dir    string
	ex     *executor.Executor
	cancel func()
	lists  int
}

func (c *endOnRead) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	switch r := req.(type) {
	case *task.GetChildrenRequest:
		if r.Path == c.dir {
			c.lists++
		}
	case *task.GetDataRequest:
		if strings.HasPrefix(r.Path, c.dir+"/") && c.cancel != nil {
			inner, cancel := done, c.cancel
			c.cancel = nil
			done = func(resp task.Response) {
				inner(resp)
				// The caller's ctx ends on the executor, right after the
				// reply that completes the observer's first snapshot.
				executor.Submit(c.ex, task.Func(func(*task.Scope) (task.Unit, error) { cancel(); return task.Unit{}, nil }), nil)
			}
		}
	}
	c.Conn.Do(req, done, watch)
}

// Package doc of Client.Observe: "It returns an error, and no channel,
// when the observer cannot start (ctx ended first, the executor
// closed)."
//
// The caller's ctx ends on the executor right after the reply that
// completes the observer's first snapshot: the observer has started, and
// its outcome and ctx's end are both in when Observe looks. Observe once
// took ctx's end half the time (a select over both) and returned ctx's
// error and no channel, and nobody could stop the observer: it went on
// following the directory, listing it again at every change, for the
// executor's life. Now the outcome wins (the channel, closed once the
// observer stops as ctx has ended), and an observer started as ctx ended
// is stopped in any case. Either way, after the tries no observer may
// list the directory again on a change.
func TestAdv5ObserveCanceledAsItStartsLeaksObserver(t *testing.T) {
	const dir = "/svc/el"
	var conn *endOnRead
	w, err := sim.New(sim.Config{Seed: 3, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 {
			conn = &endOnRead{Conn: c, dir: dir}
			return conn
		}
		return c
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	conn.ex = w.Execs[0]
	e := mustElection(t, dir)
	l, err := mustRun(t, w, 1, e.Campaign())
	if err != nil {
		t.Fatal(err)
	}
	var obsErr error
	for range 16 {
		returned := false
		var ch <-chan election.Observation
		w.Go(0, func(a *sim.Actor) {
			ctx, cancel := a.WithCancel(a.Context())
			defer cancel()
			conn.cancel = cancel
			ch, obsErr = election.ClientOf(w.Execs[0], e).Observe(ctx)
			returned = true
		})
		if !w.Settle(func() bool { return returned }) {
			t.Fatal("Observe never returned")
		}
		if ch != nil && !closedSoon(w, ch) {
			t.Fatal("Observe's channel not closed once its ctx ended")
		}
	}
	w.Settle(func() bool { return false })
	before := conn.lists
	if _, err := mustRun(t, w, 1, l.Resign()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return false })
	if conn.lists != before {
		t.Errorf("Observe's ctx ended (last outcome: %v), yet client 0 listed %s %d more times after a change: an observer nobody can stop runs on",
			obsErr, dir, conn.lists-before)
	}
}

// closedSoon drives w until ch is closed (Observe stops its observer from
// a goroutine of its own once ctx has ended, through the executor).
func closedSoon(w *sim.World, ch <-chan election.Observation) bool {
	for range 100000 {
		select {
		case _, ok := <-ch:
			if !ok {
				return true
			}
		default:
		}
		w.Drive()
		runtime.Gosched()
	}
	return false
}

package zkops_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// inFlight records, for each request its client sends, how many of the
// client's requests were still waiting for their reply.
type inFlight struct {
	*fakezk.Conn
	waiting int
	sent    []string
	before  []int
}

func (c *inFlight) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.sent = append(c.sent, req.OpName())
	c.before = append(c.before, c.waiting)
	c.waiting++
	c.Conn.Do(req, func(r task.Response) { c.waiting--; done(r) }, watch)
}

// AfterSync sends the sync and the read together, the sync first, and
// succeeds with the read's value: the read is answered after the sync
// (a session's requests are served in order), one round trip instead of
// two. A lagging member catches up at the sync, so the read is not
// stale. The read's error is AfterSync's.
func TestAfterSync(t *testing.T) {
	var c *inFlight
	w, err := sim.New(sim.Config{Seed: 3, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			c = &inFlight{Conn: conn}
			return c
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.Server.KeepHistory()
	if _, err := sim.Run(w, 0, task.Create("/d", []byte("old"), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	// Client 0's member lags behind the leader from here: it has not
	// applied client 1's write, and will not until the sync (LagHeld: no
	// drift forward at random).
	w.Server.LagHeld(w.Conns[0], 1<<40)
	if _, err := sim.Run(w, 1, task.Set("/d", []byte("new"), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if d, err := sim.Run(w, 0, task.Get("/d")); err != nil || string(d.Data) != "old" {
		t.Fatalf("plain read on the lagging member: %q, %v; want the stale %q (the member caught up: the test shows nothing)", d.Data, err, "old")
	}
	c.sent, c.before = nil, nil
	d, err := sim.Run(w, 0, zkops.AfterSync("/d", task.Get("/d")))
	if err != nil || string(d.Data) != "new" {
		t.Fatalf("AfterSync: %q, %v; want %q", d.Data, err, "new")
	}
	if len(c.sent) != 2 || c.sent[0] != "sync" || c.sent[1] != "get" || c.before[1] != 1 {
		t.Fatalf("sent %v with %v requests waiting before each: want the sync, then the read before the sync's reply", c.sent, c.before)
	}
	if _, err := sim.Run(w, 0, zkops.AfterSync("/gone", task.Get("/gone"))); !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("AfterSync of a missing node: %v, want ErrNoNode", err)
	}
}

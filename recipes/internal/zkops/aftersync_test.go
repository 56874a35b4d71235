package zkops_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// AfterSync sends the sync and the read together, the sync first, and
// succeeds with the read's value: the read is answered after the sync
// (a session's requests are served in order), one round trip instead of
// two. A lagging member catches up at the sync, so the read is not
// stale. The read's error is AfterSync's.
func TestAfterSync(t *testing.T) {
	var c *sim.RequestLog
	w, err := sim.New(sim.Config{Seed: 3, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			c = &sim.RequestLog{Conn: conn}
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
	c.Reset()
	d, err := sim.Run(w, 0, zkops.AfterSync("/d", task.Get("/d")))
	if err != nil || string(d.Data) != "new" {
		t.Fatalf("AfterSync: %q, %v; want %q", d.Data, err, "new")
	}
	if !slices.Equal(c.Sent, []string{"sync /d", "get /d"}) || c.Waiting[1] != 1 {
		t.Fatalf("sent %q with %v requests waiting before each: want the sync, then the read before the sync's reply", c.Sent, c.Waiting)
	}
	if _, err := sim.Run(w, 0, zkops.AfterSync("/gone", task.Get("/gone"))); !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("AfterSync of a missing node: %v, want ErrNoNode", err)
	}
}

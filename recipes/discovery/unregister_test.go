package discovery_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// A Static instance's node is persistent: no session's end deletes it.
// Unregister called with an ended ctx returns its error at once and the
// delete goes on in the background; when the session expires before the
// server applies it, the delete is made again on the next session, so the
// instance does not stay registered for good.
func TestUnregisterStaticWithEndedCtxAcrossExpiry(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := discovery.NewClient(w.Execs[0], "/services")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Discovery()
	reg, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", ServiceType: discovery.Static}))
	if err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(context.Background())
	end()
	if err := c.Unregister(ended, reg); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Unregister with an ended ctx: %v, want its error at once", err)
	}
	w.Execs[0].RunUntilIdle()   // the delete is sent; the server has not applied it
	w.Server.Expire(w.Conns[0]) // the session expires before it does
	sess, _ := w.Execs[0].Current()
	w.Settle(func() bool {
		s, st := w.Execs[0].Current()
		_, up := w.NodeStat(reg.Path())
		return st == task.StateConnected && s.ID != sess.ID && !up
	})
	if _, up := w.NodeStat(reg.Path()); up {
		t.Fatalf("%s is still registered on the next session (reported: %v)", reg.Path(), w.Errs)
	}
}

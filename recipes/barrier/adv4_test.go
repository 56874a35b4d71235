package barrier_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// Client.Remove says: "Remove lifts the barrier (Barrier.Remove), again on
// the next session if the session expires meanwhile. The remove is started
// whatever ctx, so `defer gate.Remove(ctx)` lifts the barrier also when ctx
// has ended". Here ctx has ended, the Remove's delete is sent, and the
// session expires before the server applies it: the background delete
// fails with the session's expiry and nobody runs it again on the next
// session. The barrier (a persistent node) stays up for good, and every
// Wait waits for ever.
func TestAdv4RemoveWithEndedCtxAcrossExpiry(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	gate, err := barrier.NewClient(w.Execs[0], "/gate")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, gate.Barrier().Set(nil)); err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(context.Background())
	end()
	if err := gate.Remove(ended); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Remove with an ended ctx: %v, want its error at once", err)
	}
	w.Execs[0].RunUntilIdle()   // the delete is sent; the server has not applied it
	w.Server.Expire(w.Conns[0]) // the session expires before it does
	sess, _ := w.Execs[0].Current()
	w.Settle(func() bool {
		s, st := w.Execs[0].Current()
		_, up := w.NodeStat("/gate")
		return st == task.StateConnected && s.ID != sess.ID && !up
	})
	if _, up := w.NodeStat("/gate"); up {
		t.Fatalf("the barrier is still up on the next session: the Remove started with an ended ctx was dropped (reported: %v)", w.Errs)
	}
}

package idpersist_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/task"
)

// A replica whose flow ends while its session lives on (its caller's
// deadline, a cancel) withdraws its candidate node: otherwise every other
// replica, and the next one on the same session, waits behind it until
// the session ends, and IDs stop once the limit is reached.
func TestStoppedReplicaWithdrawsCandidate(t *testing.T) {
	w := newWorld(t, 1, 2, fakezk.Config{})
	r, err := idpersist.NewReplica(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w.World, 0, c.Timeout(r.Run(), 5*time.Second))
	w.settle(func() bool { return o.Done })
	if !errors.Is(o.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("replica flow: %v, want the deadline", o.Err)
	}
	w.Settle(func() bool { return false }) // the cleanup runs as a flow of its own
	if left := w.Children(w.cfg.Election); len(left) != 0 {
		t.Fatalf("candidate nodes left by a stopped replica on a live session: %v", left)
	}
	// Another replica, on the other session, leads.
	w.replica(1)
	w.settle(w.draw(1, 3))
}

package seqid_test

import (
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// Every write client 0's Nexts send (the create of a missing node, each
// compare-and-set), cut off with its reply lost (applied), the session
// back through a member that has not applied it, while client 1 takes IDs
// during the cut: no ID is handed out twice, and the node's value is at
// or above every ID handed out (the counter is not lost). With a deadline
// shorter than the cut the call ends while the client is cut off; without,
// it goes on once the client is back (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	for name, deadline := range map[string]time.Duration{"deadline": 0, "retry": 2 * time.Minute} {
		t.Run(name, func(t *testing.T) {
			n := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return cutNextHistory(w, cut, deadline) }}.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

// The sweep catches a compare-and-set whose lost reply is taken for a
// write not applied (written again blindly: the IDs client 1 took
// meanwhile are handed out again).
func TestCutSweepCatchesLossNotApplied(t *testing.T) {
	defer canary.Enable("seqid/loss-not-applied")()
	err := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return cutNextHistory(w, cut, 2*time.Minute) }}.Err()
	if err == nil {
		t.Fatal("with a lost reply taken for a write not applied the sweep still passes")
	}
	t.Logf("with a lost reply taken for a write not applied: %v", err)
}

const cutSeq = "/ids/seq"

func cutNextHistory(w *sim.World, cut *sim.Cutter, deadline time.Duration) error {
	if deadline == 0 {
		deadline = w.Timeout() / 6 // half the cut
	}
	handed := map[int64]int{} // ID -> the client it was handed to
	hand := func(client int, id int64) error {
		if prev, ok := handed[id]; ok {
			return fmt.Errorf("ID %d handed to client %d and again to client %d", id, prev, client)
		}
		handed[id] = client
		return nil
	}
	next := func(client int, d time.Duration) error {
		id, err := sim.Run(w, client, c.Timeout(seqid.Next(cutSeq), d))
		if err != nil {
			return err
		}
		return hand(client, id)
	}
	cut.Armed = true
	during := false
	for range 3 {
		o := sim.Submit(w, 0, c.Timeout(seqid.Next(cutSeq), deadline))
		w.Settle(func() bool { return o.Done || cut.Cut && !during })
		if cut.Cut && !during {
			during = true
			for range 2 {
				if err := next(1, time.Minute); err != nil {
					return fmt.Errorf("client 1's next during the cut: %w", err)
				}
			}
			if !w.Settle(func() bool { return o.Done }) {
				return fmt.Errorf("client 0's next never ended")
			}
		}
		if o.Err == nil {
			if err := hand(0, o.V); err != nil {
				return err
			}
		}
	}
	if !cut.Cut {
		return nil
	}
	healed := w.Clock.Now().Add(2 * w.Timeout())
	w.Settle(func() bool { return !w.Clock.Now().Before(healed) })
	for range 2 {
		for client := range 2 {
			if err := next(client, 2*time.Minute); err != nil {
				return fmt.Errorf("client %d's next after the cut: %w", client, err)
			}
		}
	}
	d, err := sim.Run(w, 1, task.Get(cutSeq))
	if err != nil {
		return err
	}
	v, err := seqid.Decode(d.Data)
	if err != nil {
		return err
	}
	for id := range handed {
		if id > v {
			return fmt.Errorf("ID %d handed out, the node at %d", id, v)
		}
	}
	return nil
}

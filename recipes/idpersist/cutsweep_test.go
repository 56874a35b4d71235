package idpersist_test

import (
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/idpersist"
)

// Every write client 0 sends in one role, cut off with its reply lost
// (applied), the session back through a member that has not applied it,
// the call's deadline passing meanwhile (sim.CutSweep):
//
//   - replica: a Replica's Run (the parents, its candidate, the leader's
//     sequence and limits, its withdrawal), alone or behind client 1's
//     leading replica;
//   - next: Next, three times, client 1's replica leading and client 1
//     taking IDs during the cut.
//
// Then: client 0's live session leaves no candidate; client 1's replica
// leads and both clients take IDs; no ID is handed out twice.
func TestCutSweep(t *testing.T) {
	for _, role := range []string{"replica", "replica contended", "next"} {
		t.Run(role, func(t *testing.T) {
			n := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return idHistory(w, cut, role) }}.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

func idHistory(w *sim.World, cut *sim.Cutter, role string) error {
	store := &markStore{}
	cfg := idpersist.Config{Sequence: "/ids/seq", Limit: "/ids/limit", Election: "/ids/rep", Store: store, Chunk: 10, LowWater: 3}
	r0, err := idpersist.NewReplica(cfg)
	if err != nil {
		return err
	}
	r1, err := idpersist.NewReplica(cfg)
	if err != nil {
		return err
	}
	deadline := w.Timeout() / 6 // half the cut
	bound := 2 * time.Minute
	handed := map[int64]int{}
	hand := func(client int, id int64) error {
		if prev, ok := handed[id]; ok {
			return fmt.Errorf("ID %d handed to client %d and again to client %d", id, prev, client)
		}
		handed[id] = client
		return nil
	}
	next := func(client int) error {
		id, err := sim.Run(w, client, c.Timeout(idpersist.Next(cfg), bound))
		if err != nil {
			return fmt.Errorf("client %d's next: %w", client, err)
		}
		return hand(client, id)
	}
	leading1 := false
	if role != "replica" {
		sim.Submit(w, 1, c.Timeout(r1.Run(), time.Hour))
		leading1 = true
		if !w.Settle(r1.Leading) {
			return fmt.Errorf("client 1's replica never leads")
		}
		if err := next(1); err != nil {
			return err
		}
	}
	sess := w.Conns[0].SessionID()
	cut.Armed = true
	var what string
	switch role {
	case "next":
		during := false
		for range 3 {
			o := sim.Submit(w, 0, c.Timeout(idpersist.Next(cfg), deadline))
			w.Settle(func() bool { return o.Done || cut.Cut && !during })
			if cut.Cut && !during {
				during = true
				for range 2 {
					if err := next(1); err != nil {
						return fmt.Errorf("during the cut: %w", err)
					}
				}
				if !w.Settle(func() bool { return o.Done }) {
					return fmt.Errorf("client 0's next never ended")
				}
			}
			what += fmt.Sprintf("next: %d, %v; ", o.V, o.Err)
			if o.Err == nil {
				if err := hand(0, o.V); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
			}
		}
	default:
		_, err := sim.Run(w, 0, c.Timeout(r0.Run(), deadline))
		what = fmt.Sprintf("replica: %v", err)
	}
	if !cut.Cut {
		return nil
	}
	if w.Conns[0].SessionID() != sess {
		return fmt.Errorf("%s: client 0's session ended: the history missed its schedule", what)
	}
	end := w.Clock.Now().Add(bound)
	left := func() []string { return w.Ephemerals(cfg.Election, sess) }
	w.Settle(func() bool { return len(left()) == 0 || !w.Clock.Now().Before(end) })
	if l := left(); len(l) > 0 {
		return fmt.Errorf("%s: client 0 left %v of its live session for %s", what, l, bound)
	}
	if !leading1 {
		sim.Submit(w, 1, c.Timeout(r1.Run(), time.Hour))
	}
	if !w.Settle(r1.Leading) {
		return fmt.Errorf("%s: client 1's replica never leads", what)
	}
	for range 3 {
		for client := range 2 {
			if err := next(client); err != nil {
				return fmt.Errorf("%s: after the cut: %w", what, err)
			}
		}
	}
	for id := range handed {
		if id > store.v {
			return fmt.Errorf("%s: ID %d handed out above the durable mark %d", what, id, store.v)
		}
	}
	return nil
}

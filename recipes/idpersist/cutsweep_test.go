package idpersist_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// The blocking faces under the same sweep, each call in an actor of
// client 0 with a context that ends on the simulated clock (sim.CallIn):
//
//   - replica serve: Replica.Serve, alone or behind client 1's leading
//     replica, its context ending while client 0 is cut off, or
//     ("outlasting") after client 0 is back through the lagging member
//     and serves there; client 1 draws two IDs from the cut on (they
//     end once its own replica leads); served again ("again") at once
//     on the executor, while the first Serve's withdrawal may still be
//     under way, it leads near the end of its context;
//   - client next: a Client's Next, three times, as next above.
//
// Judged as the task face is, and on what the blocking face promises: a
// Serve returns its context's end (not an expiry or a deposition, which
// it handles itself), having withdrawn its candidate (its live session
// leaves none), and a Next an ID or its context's end.
func TestCutSweepBlocking(t *testing.T) {
	sim.RunSweeps(t, blockingSweeps())
}

func blockingSweeps() map[string]sim.CutSweep {
	sweeps := map[string]sim.CutSweep{}
	for _, role := range []string{"replica serve", "replica serve outlasting", "replica serve contended",
		"replica serve contended outlasting", "replica serve again", "replica serve outlasting again", "client next"} {
		sweeps[role] = sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return idHistory(w, cut, role) }}
	}
	return sweeps
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
	serve := strings.HasPrefix(role, "replica serve")
	if role == "next" || role == "client next" || strings.Contains(role, "contended") {
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
	var drawn []*sim.Outcome[int64]
	var cl *idpersist.Client
	if role == "client next" {
		if cl, err = idpersist.NewClient(w.Execs[0], cfg); err != nil {
			return err
		}
	}
	switch {
	case role == "next" || role == "client next":
		during := false
		for range 3 {
			var o *sim.Outcome[int64]
			if cl != nil {
				o = sim.CallIn(w, 0, deadline, func(_ *sim.Actor, ctx context.Context) (int64, error) { return cl.Next(ctx) })
			} else {
				o = sim.Submit(w, 0, c.Timeout(idpersist.Next(cfg), deadline))
			}
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
			if cl != nil && o.Err != nil && !errors.Is(o.Err, context.DeadlineExceeded) {
				return fmt.Errorf("%s: Next returned neither an ID nor its context's end", what)
			}
			if o.Err == nil {
				if err := hand(0, o.V); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
			}
		}
	case serve:
		// Ending while client 0 is cut off (the cut lasts a third of the
		// session timeout), or after it is back through the lagging
		// member, which it serves through until then.
		d := deadline
		if strings.HasSuffix(strings.TrimSuffix(role, " again"), " outlasting") {
			d = w.Timeout()
		}
		serveFor := func(d time.Duration) *sim.Outcome[struct{}] {
			return sim.CallIn(w, 0, d, func(a *sim.Actor, ctx context.Context) (struct{}, error) { return struct{}{}, r0.Serve(ctx, a.Exec()) })
		}
		o := serveFor(d)
		// Client 1 draws two IDs from the cut on, while client 0's
		// replica may still lead, cut off or lagging (drawn to their end
		// below, once client 1's replica leads).
		w.Settle(func() bool { return o.Done || cut.Cut })
		if cut.Cut {
			for range 2 {
				drawn = append(drawn, sim.Submit(w, 1, c.Timeout(idpersist.Next(cfg), time.Hour)))
			}
		}
		if !w.Settle(func() bool { return o.Done }) {
			return fmt.Errorf("%s: client 0's Serve never returned", role)
		}
		what = fmt.Sprintf("%s: %v", role, o.Err)
		if cut.Cut && !errors.Is(o.Err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: Serve returned %v, not its context's end", what, o.Err)
		}
		if strings.HasSuffix(role, " again") && cut.Cut {
			// Served again at once on the executor, while the first
			// Serve's withdrawal may still be under way: alone, it leads
			// near the end of its context.
			d := 3 * w.Timeout()
			o := serveFor(d)
			var sampled, leading, ended bool
			w.Go(1, func(a *sim.Actor) {
				if a.Sleep(a.Context(), d-w.Timeout()/10) == nil {
					sampled, leading, ended = true, r0.Leading(), o.Done
				}
			})
			if !w.Settle(func() bool { return o.Done && sampled }) {
				return fmt.Errorf("%s: client 0's second Serve never returned", what)
			}
			what += fmt.Sprintf("; served again: %v", o.Err)
			switch {
			case ended || !errors.Is(o.Err, context.DeadlineExceeded):
				return fmt.Errorf("%s: Serve returned %v, not its context's end", what, o.Err)
			case !leading:
				return fmt.Errorf("%s: alone, not leading near its context's end", what)
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
	for _, o := range drawn {
		if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
			return fmt.Errorf("%s: client 1's next during the cut: %v", what, o.Err)
		}
		if err := hand(1, o.V); err != nil {
			return fmt.Errorf("%s: during the cut: %w", what, err)
		}
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

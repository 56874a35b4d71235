package barrier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// Every write a simple barrier's controller sends (Set's create,
// Remove's delete), cut off with its reply lost (applied), the session
// back through a member that has not applied it, the call's deadline
// passing meanwhile: no Wait passes while the barrier is up (client 0's
// own, on the lagging member, nor client 1's), and once a Remove has
// lifted it, every client's Wait passes (sim.CutSweep). On the task face
// (c.Timeout) and the blocking face (a Client's calls in an actor whose
// context ends on the simulated clock).
func TestCutSweepSimple(t *testing.T) {
	for name, faces := range map[string]func(*sim.World) []gate{"task": taskGates, "blocking": blockingGates} {
		t.Run(name, func(t *testing.T) {
			n := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return gateHistory(w, cut, faces(w)) }}.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

// The sweep catches a Wait whose first check reads without a sync: back
// on the member that has not applied the Set whose reply was lost, it
// passes the barrier that is up.
func TestCutSweepSimpleCatchesWaitWithoutSync(t *testing.T) {
	defer canary.Enable("barrier/wait-without-sync")()
	for name, faces := range map[string]func(*sim.World) []gate{"task": taskGates, "blocking": blockingGates} {
		err := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return gateHistory(w, cut, faces(w)) }}.Err()
		if err == nil {
			t.Errorf("%s: with Wait's read unsynced the sweep still passes", name)
		} else {
			t.Logf("%s: with Wait's read unsynced: %v", name, err)
		}
	}
}

const gatePath = "/g/b"

// gate starts a simple barrier's calls on one client, each ending by a
// deadline.
type gate struct {
	set, remove, wait func(d time.Duration) *sim.Outcome[task.Unit]
}

func taskGates(w *sim.World) []gate {
	b, err := barrier.New(gatePath)
	if err != nil {
		panic(err)
	}
	var gs []gate
	for i := range 2 {
		on := func(t task.Task[task.Unit]) func(time.Duration) *sim.Outcome[task.Unit] {
			return func(d time.Duration) *sim.Outcome[task.Unit] { return sim.Submit(w, i, c.Timeout(t, d)) }
		}
		gs = append(gs, gate{set: on(b.Set([]byte("up"))), remove: on(b.Remove()), wait: on(b.Wait())})
	}
	return gs
}

func blockingGates(w *sim.World) []gate {
	var gs []gate
	for i := range 2 {
		cl, err := barrier.NewClient(w.Execs[i], gatePath)
		if err != nil {
			panic(err)
		}
		on := func(call func(ctx context.Context) error) func(time.Duration) *sim.Outcome[task.Unit] {
			return func(d time.Duration) *sim.Outcome[task.Unit] {
				return sim.CallIn(w, i, d, func(_ *sim.Actor, ctx context.Context) (task.Unit, error) { return task.Unit{}, call(ctx) })
			}
		}
		gs = append(gs, gate{
			set:    on(func(ctx context.Context) error { return cl.Set(ctx, []byte("up")) }),
			remove: on(cl.Remove),
			wait:   on(cl.Wait),
		})
	}
	return gs
}

func gateHistory(w *sim.World, cut *sim.Cutter, g []gate) error {
	deadline := w.Timeout() / 6 // half the cut
	up := func() bool { _, ok := w.NodeStat(gatePath); return ok }
	// wait runs a Wait of client i to its end; one that passes must find
	// the barrier down.
	wait := func(i int, d time.Duration) error {
		o := g[i].wait(d)
		if !w.Settle(func() bool { return o.Done }) {
			return fmt.Errorf("client %d's wait never ended", i)
		}
		if o.Err == nil && up() {
			return fmt.Errorf("client %d's wait passed the barrier while it is up", i)
		}
		return nil
	}
	run := func(o *sim.Outcome[task.Unit]) error {
		if !w.Settle(func() bool { return o.Done }) {
			return sim.ErrStuck
		}
		return o.Err
	}
	// Client 1 sets and removes it once first: the parent exists.
	if err := run(g[1].set(time.Minute)); err != nil {
		return fmt.Errorf("client 1's set: %w", err)
	}
	if err := run(g[1].remove(time.Minute)); err != nil {
		return fmt.Errorf("client 1's remove: %w", err)
	}
	cut.Armed = true
	setErr := run(g[0].set(deadline))
	if up() {
		// The controller's own Wait (on the member it came back
		// through, past the cut's end), and another client's.
		if err := wait(0, w.Timeout()); err != nil {
			return fmt.Errorf("set (%v): %w", setErr, err)
		}
		if err := wait(1, deadline); err != nil {
			return fmt.Errorf("set (%v): %w", setErr, err)
		}
	}
	removeErr := run(g[0].remove(deadline))
	if !cut.Cut {
		return nil
	}
	healed := w.Clock.Now().Add(2 * w.Timeout())
	w.Settle(func() bool { return !w.Clock.Now().Before(healed) })
	if removeErr != nil {
		// The remove's outcome unknown to the controller: it removes
		// again, as the doc says.
		if err := run(g[0].remove(2 * time.Minute)); err != nil {
			return fmt.Errorf("remove again after %v: %w", removeErr, err)
		}
	}
	if up() {
		return fmt.Errorf("set: %v, remove: %v: the barrier is still up", setErr, removeErr)
	}
	for i := range 2 {
		o := g[i].wait(2 * time.Minute)
		if err := run(o); err != nil {
			return fmt.Errorf("set: %v, remove: %v: client %d's wait after the remove: %w", setErr, removeErr, i, err)
		}
	}
	return nil
}

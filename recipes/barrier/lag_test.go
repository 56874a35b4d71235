package barrier

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// The syncs of Wait's first check and of Leave's listing, each tried on
// a member that lags behind the leader: with the sync the answer is the
// leader's, without it (the canary) the test fails (for Leave:
// TestCanaryLeaveWithoutSync). They reach the stale read every time,
// whatever the schedule around them.

func TestWaitOnLaggingMemberSeesTheBarrier(t *testing.T) {
	if err := waitOnLaggingMember(t); err != nil {
		t.Fatal(err)
	}
	restore := canary.Enable(bugWaitWithoutSync)
	defer restore()
	if err := waitOnLaggingMember(t); err == nil {
		t.Fatal("with Wait's sync off the test still passes")
	} else {
		t.Logf("with Wait's sync off: %v", err)
	}
}

func TestLeaveOnLaggingMemberSeesTheParticipant(t *testing.T) {
	if err := leaveOnLaggingMember(t); err != nil {
		t.Fatal(err)
	}
}

// lagWorld: two clients. The tests lag a member with LagHeld: its view
// stays back until the read that matters, whatever the schedule (each
// test checks it with a plain read first; seeds 1 to 60 all pass, and
// all fail with the sync off).
func lagWorld(t *testing.T) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.Server.KeepHistory()
	return w
}

// runFor drives w until o is done or d of the clock has passed; it
// reports whether o is done.
func runFor[T any](w *sim.World, o *sim.Outcome[T], d time.Duration) bool {
	end := w.Clock.Now().Add(d)
	w.Settle(func() bool { return o.Done || !w.Clock.Now().Before(end) })
	return o.Done
}

// waitOnLaggingMember: the barrier is set through client 0 while client
// 1's member lags (its watched reads too); client 1's Wait must hold
// until the barrier is removed.
func waitOnLaggingMember(t *testing.T) error {
	w := lagWorld(t)
	w.Server.LagWatchedReads(true)
	b, err := New("/b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Exists("/")); err != nil {
		t.Fatal(err)
	}
	w.Server.LagHeld(w.Conns[1], 10*time.Second)
	if _, err := sim.Run(w, 0, b.Set(nil)); err != nil {
		t.Fatal(err)
	}
	if st, err := sim.Run(w, 1, task.Exists("/b")); err != nil || st != nil {
		t.Fatalf("read on the lagging member: %v, %v; want the barrier missing (the member caught up: the test shows nothing)", st, err)
	}
	o := sim.Submit(w, 1, b.Wait())
	if runFor(w, o, 3*time.Second) {
		return fmt.Errorf("Wait on the lagging member returned (%v) while the barrier was set", o.Err)
	}
	if _, err := sim.Run(w, 0, b.Remove()); err != nil {
		t.Fatal(err)
	}
	if !runFor(w, o, 10*time.Second) || o.Err != nil {
		t.Fatalf("Wait after Remove: done %v, %v", o.Done, o.Err)
	}
	return nil
}

// leaveOnLaggingMember: A enters a barrier of one, its member starts to
// lag, B enters; A's Leave must wait for B.
func leaveOnLaggingMember(t *testing.T) error {
	w := lagWorld(t)
	d, err := NewDouble("/dbl", 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := sim.Run(w, 0, d.Enter())
	if err != nil {
		t.Fatal(err)
	}
	w.Server.LagHeld(w.Conns[0], 10*time.Second)
	b, err := sim.Run(w, 1, d.Enter())
	if err != nil {
		t.Fatal(err)
	}
	bName := b.Path()[strings.LastIndexByte(b.Path(), '/')+1:]
	if l, err := sim.Run(w, 0, task.Children("/dbl")); err != nil || slices.Contains(l.Names, bName) {
		t.Fatalf("listing on the lagging member: %v, %v; want B's node missing (the member caught up: the test shows nothing)", l.Names, err)
	}
	o := sim.Submit(w, 0, a.Leave())
	if runFor(w, o, 3*time.Second) {
		for _, n := range w.Children("/dbl") {
			if n == bName {
				return fmt.Errorf("A's Leave on the lagging member ended (%v) while B's node %s was there", o.Err, n)
			}
		}
		t.Fatalf("B's node %s is gone, nobody deleted it", bName)
	}
	ob := sim.Submit(w, 1, b.Leave())
	if !runFor(w, o, 10*time.Second) || !runFor(w, ob, 10*time.Second) || o.Err != nil || ob.Err != nil {
		t.Fatalf("Leaves: A done %v, %v; B done %v, %v", o.Done, o.Err, ob.Done, ob.Err)
	}
	return nil
}

package rwlock_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/rwlock"
)

// liveHoldRun: two actors take the write lock through one Client at
// once; as soon as both contender nodes are in, an operator deletes the lower one, so
// that the first acquire is handed a Held whose node is gone and the
// second holds by the head rule. With actors waking late (ActorLag) the
// first one may see its outcome after the second has: the Client then
// records the lost Held over the live one. Once the lost one's loss is
// known, a TryAcquire on the Client must still be refused with
// ErrAlreadyHeld (the Client holds the second's lock), not fail with
// ErrBusy behind its own node. It reports whether the schedule was
// reached (the lost Held's outcome seen last) and the TryAcquire's error.
func liveHoldRun(t *testing.T, seed uint64) (reached bool, tryErr error) {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: seed, Clients: 1, ActorLag: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const dir = "/liveheld"
	c, err := rwlock.NewClient(w.Execs[0], dir)
	if err != nil {
		t.Fatal(err)
	}
	var hs []*rwlock.Held
	for range 2 {
		w.Go(0, func(a *sim.Actor) {
			if h, err := c.Acquire(a.Context()); err == nil {
				hs = append(hs, h)
			}
		})
	}
	deleted := false
	for range 100000 {
		if len(hs) == 2 {
			break
		}
		n := w.Step()
		if kids := w.Children(dir); !deleted && len(kids) == 2 {
			if err := w.Server.AdminDelete(w.ServerPath(dir + "/" + lowest(kids))); err != nil {
				t.Fatal(err)
			}
			deleted = true
		}
		if n == 0 && !w.Clock.AdvanceToNext() {
			break
		}
	}
	if len(hs) != 2 {
		t.Fatalf("seed %d: acquires never both ended (%d)", seed, len(hs))
	}
	// hs[1] is the Held whose outcome the Client saw last.
	last, live := hs[1], hs[0]
	if last.Token() > live.Token() {
		return false, nil // the usual order: the lost one seen first
	}
	reached = true
	var tryErr2 error
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		if err := a.Wait(a.Context(), last.Done()); err != nil {
			tryErr2 = err
			return
		}
		h, err := c.TryAcquire(a.Context())
		if err == nil {
			_ = c.Release(a.Context(), h)
		}
		tryErr2 = err
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatalf("seed %d: TryAcquire never ended", seed)
	}
	if !live.IsHeld() {
		t.Fatalf("seed %d: the live hold ended: %v", seed, live.Err())
	}
	return true, tryErr2
}

// lowest is the contender of kids with the lowest sequence number (the
// server's ten digits, none wrapped here).
func lowest(kids []string) string {
	low := kids[0]
	for _, k := range kids[1:] {
		if k[len(k)-10:] < low[len(low)-10:] {
			low = k
		}
	}
	return low
}

// Client doc: "Acquire and TryAcquire fail at once with ErrAlreadyHeld
// while this Client holds the lock in either mode". Two goroutines take
// the write lock through one Client at once; an operator deletes the
// lower contender node, so the first is handed a Held whose node is gone
// (PROTOCOL.md, Faults) and the second, the writer right above it,
// holds by the head rule; the first goroutine wakes late (the first
// seed of a world with ActorLag, from 1, where it does: 2) and sees its
// outcome after the second. The Client recorded the write Held it saw
// last, the lost one, as its hold: once that loss was known, a
// TryAcquire, the Client holding the second's write lock, failed with
// ErrBusy behind the Client's own live node (and an Acquire queued
// behind it) instead of ErrAlreadyHeld. The Client now keeps the write
// hold with the higher token: of two not known to have ended, the
// earlier one's node was gone before the later one held (a writer's
// token is above every earlier holder's).
func TestConcurrentWriteAcquiresKeepTheLiveHold(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		reached, err := liveHoldRun(t, seed)
		if !reached {
			continue
		}
		if !errors.Is(err, rwlock.ErrAlreadyHeld) {
			t.Fatalf("seed %d: TryAcquire on a Client holding the lock = %v, want ErrAlreadyHeld", seed, err)
		}
		return
	}
	t.Fatal("no seed of 60 saw the lost Held's outcome last")
}

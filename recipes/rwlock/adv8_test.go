package rwlock_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/rwlock"
)

// Adversarial tests, round 8: what the docs say, under schedules chosen
// to break it.

// The package doc: "Fencing tokens (Held.Token) are the nodes' czxids: a
// writer's is above every earlier holder's and below every later one's",
// of holders whose node exists (PROTOCOL.md, Faults: a waiter "whose
// watched head goes first takes the lock without listing and gets a Held
// whose node is gone, lost as above").
//
// W0 holds; reader R1 waits on it (head); an operator deletes R1's node;
// W2 queues behind W0 (R1's node gone). W0 releases: W2 holds, and R1,
// its head gone, is handed a Held without listing, after W2's grant and
// with a lower token. That Held is lost once watched (Done closes, Err
// wraps ErrLockLost), and its fenced writes are refused: the doc now says
// so beside the token's promise (a doc fix; this test pins it).
func TestAdv8DeletedWaiterHandedALostHeld(t *testing.T) {
	w, _ := newWorld(t, 3)
	l := mustLock(t, "/rw")
	w0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	r1 := sim.Submit(w, 1, l.AcquireRead())
	w.Drive()
	var reader string
	for _, k := range w.Children("/rw") {
		if "/rw/"+k != w0.Path() {
			reader = "/rw/" + k
		}
	}
	if err := w.Server.AdminDelete(reader); err != nil {
		t.Fatal(err)
	}
	w2 := sim.Submit(w, 2, l.Acquire())
	w.Drive()
	if _, err := mustRun(t, w, 0, w0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return r1.Done && w2.Done }) || w2.Err != nil {
		t.Fatalf("r1 %+v, w2 %+v", r1, w2)
	}
	if r1.Err != nil {
		return // it listed and found its node gone: nothing handed out
	}
	h := r1.V
	if h.Token() >= w2.V.Token() {
		t.Fatalf("reader's token %d, writer's %d: the schedule changed", h.Token(), w2.V.Token())
	}
	_ = h.IsHeld() // the first call sets the node watch
	if !w.Settle(func() bool { return isClosed(h.Done()) }) || !errors.Is(h.Err(), rwlock.ErrLockLost) {
		t.Fatalf("a Held whose node is gone: Err %v", h.Err())
	}
	if _, err := mustRun(t, w, 1, h.Fenced()); !errors.Is(err, rwlock.ErrLockLost) {
		t.Fatalf("fenced write of the lost reader: %v", err)
	}
}

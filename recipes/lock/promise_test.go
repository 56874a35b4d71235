package lock_test

// Promises of the package's docs that an adversarial review found broken,
// each with the schedule that broke it (they fail on the code before the
// fix), and two that held with no test of their own. The two after them
// (a Client that queued behind a node of its own still being deleted)
// fail on the code before their fix too, and so do the last four, from a
// second review (an operator's write racing the handoff's mark, a mark
// refused by the ACL, re-entry while a cleanup is pending), except the
// applied=true case of the retried mark, which held and is kept beside
// the one that did not.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// TryAcquire on a directory whose counter is exhausted, holding no
// contender but a live kazoo Lock node (which this lock ignores: "kazoo's
// Lock, whose nodes it ignores (the two do not exclude each other)"), must
// not wait: "with the directory's counter exhausted it waits for no one (it
// goes on only when no other contender is in the directory)" (PROTOCOL.md,
// Trying), and Lock.TryAcquire fails with ErrBusy "without queueing".
// It used to wait (for as long as the kazoo holder held), going on only
// once the kazoo node was gone; it fails with ErrBusy at once now.
func TestTryAtAnExhaustedCounterBesideAKazooHolder(t *testing.T) {
	w, _ := newWorld(t, 31, 2, fakezk.Config{})
	const dir = "/locks/kz"
	l := mustLock(t, dir)
	for _, p := range []string{"/locks", dir} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	// A live kazoo Lock holder on the same path: its node, of client 1's session.
	kz, err := mustRun(t, w, 1, task.Create(dir+"/0123456789abcdef__lock__0000000000", nil, task.Ephemeral))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Server.SetCounters(dir, 0, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	start := w.Clock.Now()
	o := sim.Submit(w, 0, l.TryAcquire())
	until := start.Add(time.Minute)
	w.Settle(func() bool { return o.Done || !w.Clock.Now().Before(until) })
	if !o.Done {
		if _, err := mustRun(t, w, 1, task.Delete(kz, task.AnyVersion)); err != nil {
			t.Fatal(err)
		}
		w.Settle(func() bool { return o.Done })
		t.Fatalf("TryAcquire still waiting after %v, with no contender in %s but a kazoo holder's node; once that node went it ended with (%v, %v)",
			until.Sub(start), dir, o.V != nil, o.Err)
	}
	if !errors.Is(o.Err, lock.ErrBusy) {
		t.Fatalf("TryAcquire = %v, want ErrBusy", o.Err)
	}
}

// Held.Release: "Like any task, it does not start in a scope that has
// already ended (task.Run): to give it back whatever the outcome of the
// work in between, register it with Scope.Defer once taken". A flow
// acquires, registers the release, and its deadline passes inside the
// critical section: the release runs all the same, Done closes, the node
// goes and another client acquires. (Run after the section on the ended
// scope, as a finally, the release never started: the doc promised more
// than a task can do.)
func TestReleaseRegisteredWithDeferRunsPastTheDeadline(t *testing.T) {
	w, _ := newWorld(t, 32, 2, fakezk.Config{})
	const dir = "/locks/fin"
	l := mustLock(t, dir)
	var held *lock.Held
	section := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, l.Acquire(), func(h *lock.Held, err error) {
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			held = h
			s.Defer(h.Release())
			task.Run(s, c.Sleep(2*time.Second), k) // the critical section, past the deadline
		})
	})
	_, err := mustRun(t, w, 0, c.Timeout(section, time.Second))
	if !errors.Is(err, task.ErrDeadlineExceeded) || held == nil {
		t.Fatalf("section = %v (held %v), want the deadline's error after acquiring", err, held != nil)
	}
	sess, _ := w.Execs[0].Current()
	other := sim.Submit(w, 1, l.Acquire())
	until := w.Clock.Now().Add(30 * time.Second)
	w.Settle(func() bool { return other.Done || !w.Clock.Now().Before(until) })
	if cur, _ := w.Execs[0].Current(); cur.ID != sess.ID {
		t.Fatalf("holder's session changed %#x -> %#x: the test needs it live", sess.ID, cur.ID)
	}
	if !isClosed(held.Done()) || !errors.Is(held.Err(), lock.ErrUnlocked) {
		t.Errorf("Done closed %v, Err %v: the release never started", isClosed(held.Done()), held.Err())
	}
	if _, ok := w.NodeStat(held.Path()); ok {
		t.Errorf("released node %s still there, its session live: the delete never ran", held.Path())
	}
	if !other.Done {
		t.Errorf("the other client never acquired: children %v", w.Children(dir))
	}
}

// A promise that holds (no other test checks it: they suspend
// a hold taken earlier): "While the session is suspended IsHeld is false
// and Err still nil; on reconnect to the same session IsHeld is true
// again", for a hold granted by the notification that arrives just before
// the waiter's connection drops (the waiter behind the head, and the
// marked handoff to a waiter behind a waiter).
func TestHoldGrantedAtDisconnectIsUncertain(t *testing.T) {
	for _, head := range []bool{true, false} {
		w, _ := newWorld(t, 33, 3, fakezk.Config{})
		const dir = "/locks/susp"
		l := mustLock(t, dir)
		h0, err := mustRun(t, w, 0, l.Acquire())
		if err != nil {
			t.Fatal(err)
		}
		holder, waiter := h0, 1
		var o *sim.Outcome[*lock.Held]
		if head {
			o = sim.Submit(w, waiter, l.Acquire())
			w.Drive()
		} else {
			// 1 queues behind 0, 2 behind 1; 0 releases and 1 holds
			// (marking its node); 1 then releases to 2.
			o1 := sim.Submit(w, 1, l.Acquire())
			w.Drive()
			o = sim.Submit(w, 2, l.Acquire())
			w.Drive()
			if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
				t.Fatal(err)
			}
			w.Drive()
			if !o1.Done || o1.Err != nil || o.Done {
				t.Fatalf("setup: %+v %+v", o1, o)
			}
			holder, waiter = o1.V, 2
		}
		sim.Submit(w, waiter-1, holder.Release())
		w.Execs[waiter-1].RunUntilIdle() // the delete is sent
		w.Server.RunUntilIdle()          // applied; the waiter's notification is sent
		w.Server.Partition(w.Conns[waiter], 2*time.Second, false)
		w.Execs[waiter].RunUntilIdle()
		w.Drive()
		if !o.Done || o.Err != nil || w.Conns[waiter].Connected() {
			t.Fatalf("head=%v: the schedule did not grant the hold while cut off: %+v, connected %v", head, o, w.Conns[waiter].Connected())
		}
		if o.V.IsHeld() || o.V.Err() != nil {
			t.Errorf("head=%v: hold granted at the disconnect: IsHeld %v, Err %v while suspended", head, o.V.IsHeld(), o.V.Err())
		}
		if !w.Settle(o.V.IsHeld) {
			t.Errorf("head=%v: not held again after reconnect: %v", head, o.V.Err())
		}
	}
}

// "A hold ends once, closing Held.Done: ... wraps ErrLockLost ... (...
// or its data changed by someone else)", and a Client "refuses Acquire
// ... while it holds the lock" because "a holder that called Acquire
// again would wait behind itself forever". After a loss by a write to
// its node (an operator revoking it), the hold has ended, so the Client
// lets Acquire through; the lost node used to stay at the head of the
// queue for the session's life, every other client and the Client's own
// next Acquire waiting behind it. The node of a hold lost while the
// session lives is deleted now: the next client holds, and the Client's
// new attempt holds after it.
func TestLostHoldsNodeIsDeleted(t *testing.T) {
	w, _ := newWorld(t, 34, 2, fakezk.Config{})
	const dir = "/locks/lw"
	cl, err := lock.NewClient(w.Execs[0], dir)
	if err != nil {
		t.Fatal(err)
	}
	var h, h2 *lock.Held
	var lostErr, again error
	held, over := make(chan struct{}), make(chan struct{})
	w.Go(0, func(a *sim.Actor) {
		defer close(over)
		var err error
		h, err = cl.Acquire(a.Context())
		if err != nil {
			lostErr = err
			close(held)
			return
		}
		close(held)
		if err := a.Wait(a.Context(), h.Done()); err != nil {
			return
		}
		lostErr = h.Err()
		ctx, cancel := a.WithTimeout(a.Context(), 30*time.Second)
		defer cancel()
		h2, again = cl.Acquire(ctx)
	})
	w.Settle(func() bool { return isClosed(held) })
	if h == nil {
		t.Fatalf("first Acquire: %v", lostErr)
	}
	other := sim.Submit(w, 1, mustLock(t, dir).Acquire())
	w.Drive()
	if err := w.Server.AdminSetData(h.Path(), []byte("operator")); err != nil {
		t.Fatal(err)
	}
	sess, _ := w.Execs[0].Current()
	w.Settle(func() bool { return other.Done })
	if !other.Done || other.Err != nil {
		t.Fatalf("another client still waits behind the lost hold's node: %+v, children %v", other, w.Children(dir))
	}
	if !errors.Is(lostErr, lock.ErrLockLost) {
		t.Fatalf("hold ended with %v, want ErrLockLost", lostErr)
	}
	if _, ok := w.NodeStat(h.Path()); ok {
		t.Fatalf("the lost hold's node %s is still there", h.Path())
	}
	if _, err := mustRun(t, w, 1, other.V.Release()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return isClosed(over) })
	if cur, _ := w.Execs[0].Current(); cur.ID != sess.ID {
		t.Fatalf("session changed: the test needs it live")
	}
	if again != nil || h2 == nil {
		t.Fatalf("the Client's Acquire after its hold was lost = %v (children %v)", again, w.Children(dir))
	}
}

// A promise that holds (TestClientACL checks only the ACLs sent):
// Client.Release "The release is always started, whatever ctx ... A
// failure of the delete then (an ACL that refuses it: task.ErrNoAuth) goes
// to the executor's Config.OnError, since no caller hears it": a Release
// whose ctx has ended, of a node in a directory that refuses deletes,
// returns ctx's error at once, closes Done, and the NoAuth reaches OnError
// exactly once.
func TestBackgroundReleaseFailureGoesToOnError(t *testing.T) {
	w, _ := newWorld(t, 35, 1, fakezk.Config{})
	const dir = "/locks/noauth"
	noDelete := []task.ACL{{Perms: task.PermAll &^ task.PermDelete, Scheme: "world", ID: "anyone"}}
	acl := task.ACLProvider(func(p string) []task.ACL {
		if p == dir {
			return noDelete
		}
		return nil
	})
	cl, err := lock.NewClient(w.Execs[0], dir, lock.WithACL(acl))
	if err != nil {
		t.Fatal(err)
	}
	var h *lock.Held
	var acqErr, relErr error
	over := make(chan struct{})
	w.Go(0, func(a *sim.Actor) {
		defer close(over)
		h, acqErr = cl.Acquire(a.Context())
		if acqErr != nil {
			return
		}
		ctx, cancel := a.WithCancel(a.Context())
		cancel()
		relErr = cl.Release(ctx, h)
	})
	w.Settle(func() bool { return isClosed(over) })
	w.Drive()
	if acqErr != nil {
		t.Fatal(acqErr)
	}
	if !errors.Is(relErr, task.ErrCanceled) {
		t.Fatalf("Release with an ended ctx = %v, want ErrCanceled", relErr)
	}
	if !isClosed(h.Done()) || !errors.Is(h.Err(), lock.ErrUnlocked) {
		t.Fatalf("Done %v, Err %v after the background release", isClosed(h.Done()), h.Err())
	}
	n := 0
	for _, e := range w.Errs {
		if errors.Is(e, task.ErrNoAuth) {
			n++
		} else {
			t.Errorf("OnError got %v", e)
		}
	}
	if n != 1 {
		t.Fatalf("OnError got the refused delete %d times (errors %v), want once", n, w.Errs)
	}
}

// "a client that re-takes a lock no one else asked for since its
// last hold takes one round trip (a create and a plain exists of the
// directory, sent together)" (package doc, Cost), and PROTOCOL.md: "one
// whose number turns out otherwise lists ... and sends the listing behind
// its creates again until it finds itself alone". Client 0 meets
// contention once (client 1 holds while it queues), then takes and
// releases the lock alone, round after round: no one else asks for it
// again. Every one of those re-takes finds its number one past its last
// (the proof it is alone) and holds without looking at the listing, yet
// keeps sending the listing behind its create: two requests per re-take,
// for as long as the session lives, not one.
func TestFastPathReturnsAfterContention(t *testing.T) {
	w, cnts := newWorld(t, 36, 2, fakezk.Config{})
	l := mustLock(t, "/locks/back")
	holdRelease(t, w, 0, l)
	h1, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, l.Acquire()) // queues behind client 1
	w.Drive()
	if _, err := mustRun(t, w, 1, h1.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o.Done || o.Err != nil {
		t.Fatalf("client 0 after client 1 released: %+v", o)
	}
	if _, err := mustRun(t, w, 0, o.V.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	// From here on client 0 is alone.
	var perRound []int
	for round := range 4 {
		sent := cnts[0].sent
		a := sim.Submit(w, 0, l.Acquire())
		w.Drive()
		if !a.Done || a.Err != nil {
			t.Fatalf("round %d: %+v", round, a)
		}
		perRound = append(perRound, cnts[0].sent-sent)
		if _, err := mustRun(t, w, 0, a.V.Release()); err != nil {
			t.Fatal(err)
		}
		w.Drive()
	}
	for round, n := range perRound[1:] {
		if n != 2 {
			t.Fatalf("requests per re-take alone after the contention ended: %v; re-take %d sent %d, want 2 (the create and the directory's exists, in one round trip)", perRound, round+1, n)
		}
	}
}

// The rwlock review's schedule, on lock: Client's doc, "While a Release
// of this Client goes on in the background ... Acquire and TryAcquire
// first wait for it"; Lock.TryAcquire "takes the lock only if no other
// contender is ahead of it"; "an acquire that fails ... leaves no node
// behind". Client 1 holds the lock; the Client on client 0 waits in
// Acquire; its ctx is canceled; the cleanup's delete is sent and the
// connection drops before the server applies it, so Acquire returns with
// its node still there. Client 1 releases. The Client's TryAcquire, with
// the lock free, failed with ErrBusy behind the Client's own abandoned
// node: the cleanup was not counted with the Client's Releases. It is
// now (zkops.StartCleanup), and the next acquire waits for it.
func TestCanceledAcquireLeavesNoNodeInTheClientsWay(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	l := mustLock(t, "/lk")
	other, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := lock.NewClient(w.Execs[0], "/lk")
	if err != nil {
		t.Fatal(err)
	}
	var cancel context.CancelFunc
	var acqErr, tryErr error
	var left []string
	returned, proceed, over := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := w.Go(0, func(a *sim.Actor) {
		defer close(over)
		var ctx context.Context
		ctx, cancel = a.WithCancel(a.Context())
		_, acqErr = cl.Acquire(ctx)
		close(returned)
		if a.Wait(a.Context(), proceed) != nil {
			return
		}
		var h *lock.Held
		h, tryErr = cl.TryAcquire(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), h)
		}
	})
	w.Settle(func() bool { return len(w.Children("/lk")) == 2 })
	w.Interrupt(a, cancel)
	w.Execs[0].RunUntilIdle()
	w.Server.Drop(w.Conns[0], false)
	w.Settle(func() bool { return isClosed(returned) })
	left = w.Children("/lk")
	if _, err := mustRun(t, w, 1, other.Release()); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("actor never ended")
	}
	if !errors.Is(acqErr, task.ErrCanceled) {
		t.Fatalf("Acquire after cancel: %v", acqErr)
	}
	if tryErr != nil {
		t.Fatalf("TryAcquire with the lock free = %v; the directory when the canceled Acquire returned: %v", tryErr, left)
	}
}

// The same after a loss: the Client's hold is lost because an operator
// wrote its node; the node's delete (Held.lose) is delayed by a
// connection drop. The Client's next TryAcquire, with no other
// contender, failed with ErrBusy behind the Client's own lost node. The
// delete is counted now, from before Done closes.
func TestLostHoldsNodeIsNotInTheClientsWay(t *testing.T) {
	w, _ := newWorld(t, 1, 1, fakezk.Config{})
	cl, err := lock.NewClient(w.Execs[0], "/lk")
	if err != nil {
		t.Fatal(err)
	}
	var h *lock.Held
	var acqErr, tryErr error
	held, over := make(chan struct{}), make(chan struct{})
	w.Go(0, func(a *sim.Actor) {
		defer close(over)
		h, acqErr = cl.Acquire(a.Context())
		close(held)
		if acqErr != nil || a.Wait(a.Context(), h.Done()) != nil {
			return
		}
		var h2 *lock.Held
		h2, tryErr = cl.TryAcquire(a.Context())
		if tryErr == nil {
			_ = cl.Release(a.Context(), h2)
		}
	})
	w.Settle(func() bool { return isClosed(held) })
	if acqErr != nil {
		t.Fatal(acqErr)
	}
	_ = h.Err()
	w.Drive()
	if err := w.Server.AdminSetData(h.Path(), []byte("operator")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && !isClosed(h.Done()); i++ {
		w.Server.RunUntilIdle()
		w.Execs[0].RunUntilIdle()
	}
	if !isClosed(h.Done()) {
		t.Fatal("the loss was not heard")
	}
	w.Server.Drop(w.Conns[0], false)
	if !w.Settle(func() bool { return isClosed(over) }) {
		t.Fatal("actor never ended")
	}
	if tryErr != nil {
		t.Fatalf("TryAcquire with no other contender, after the Client's hold was lost: %v", tryErr)
	}
}

// Package doc: "Err ... wraps ErrLockLost and the cause after a loss (...
// the node was deleted, or its data changed by someone else)" and "a
// write to the holder's node ends its hold, and the holder deletes the
// node"; Fenced: "applied only while the writer's lock node exists with
// the version it was acquired with".
//
// Client 1 holds, client 0 waits behind it. Client 1 releases; client 0
// holds on the notification and sends its mark (setData at version 0),
// which the server has not applied yet when an operator writes client 0's
// node (version 0 -> 1). The mark was then refused (bad version) and
// ignored, and the Held kept the marked version (1), exactly the
// operator's: the write passed for the mark, the hold never ended and
// fenced writes went on being applied (this test failed on the code
// before the fix). A first send of the mark refused for the version now
// loses the hold (someone else wrote the node), fences on the create's
// version, which the node has left, and deletes the node.
func TestOperatorWriteRacingTheMarkEndsTheHold(t *testing.T) {
	w, _ := newWorld(t, 41, 2, fakezk.Config{})
	const dir = "/locks/markrace"
	l := mustLock(t, dir)
	h1, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, l.Acquire())
	w.Drive()
	if o.Done {
		t.Fatalf("setup: client 0 did not queue: %+v", o)
	}
	sim.Submit(w, 1, h1.Release())
	w.Execs[1].RunUntilIdle() // the delete is sent
	w.Server.RunUntilIdle()   // applied; client 0's notification is sent
	w.Execs[0].RunUntilIdle() // client 0 holds and sends its mark
	if !o.Done || o.Err != nil {
		t.Fatalf("setup: client 0 did not hold on the notification: %+v", o)
	}
	h := o.V
	if _, st, _ := w.Server.NodeData(h.Path()); st.Version != 0 {
		t.Fatalf("setup: the mark was applied before the operator's write (version %d)", st.Version)
	}
	operatorWriteEndsHold(t, w, h, dir)
}

// operatorWriteEndsHold has an operator write the holder's node h (of
// client 0): a fenced write is refused after, the hold ends with
// ErrLockLost, and the node is deleted.
func operatorWriteEndsHold(t *testing.T, w *sim.World, h *lock.Held, dir string) {
	t.Helper()
	if err := w.Server.AdminSetData(h.Path(), []byte("operator")); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	_ = h.Err() // sets the node watch
	w.Drive()
	_, err := mustRun(t, w, 0, h.Fenced(task.CreateOp(dir+"-fenced", nil, task.Persistent)))
	w.Drive()
	if err == nil {
		t.Errorf("a fenced write after an operator wrote the holder's node was applied")
	}
	if !errors.Is(h.Err(), lock.ErrLockLost) {
		t.Errorf("Held.Err = %v after an operator wrote the holder's node, want ErrLockLost", h.Err())
	}
	if _, ok := w.NodeStat(h.Path()); ok {
		t.Errorf("the written holder's node %s is still there, its session live", h.Path())
	}
}

// The same race after the mark's first send was lost with the connection
// (Handoff in one round trip: the mark is retried): the operator writes
// the node before the retry, which is refused for the version whatever
// became of the first send. If the first send was not applied, the node
// is at version 1 with the operator's data, the version the Held expects:
// the retry's refusal was taken for our own first send applied, and the
// hold never ended (this case failed on the code before the fix). The
// node is now read after such a refusal, and only the mark at version 1
// counts as ours. If the first send was applied, the operator's write
// moves the node to version 2, which the node watch saw already.
func TestOperatorWriteRacingARetriedMarkEndsTheHold(t *testing.T) {
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			w, _ := newWorld(t, 43, 2, fakezk.Config{})
			const dir = "/locks/markretry"
			l := mustLock(t, dir)
			h1, err := mustRun(t, w, 1, l.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			o := sim.Submit(w, 0, l.Acquire())
			w.Drive()
			if o.Done {
				t.Fatalf("setup: client 0 did not queue: %+v", o)
			}
			sim.Submit(w, 1, h1.Release())
			w.Execs[1].RunUntilIdle() // the delete is sent
			w.Server.RunUntilIdle()   // applied; client 0's notification is sent
			w.Execs[0].RunUntilIdle() // client 0 holds and sends its mark
			if !o.Done || o.Err != nil {
				t.Fatalf("setup: client 0 did not hold on the notification: %+v", o)
			}
			h := o.V
			if _, st, _ := w.Server.NodeData(h.Path()); st.Version != 0 {
				t.Fatalf("setup: the mark was applied before the drop (version %d)", st.Version)
			}
			w.Server.Drop(w.Conns[0], applied)
			operatorWriteEndsHold(t, w, h, dir)
		})
	}
}

// WithACL: "makes the lock create its contender nodes ... with the ACL p
// gives for each path"; Held: "The lock ends once: when it is released
// ... or lost (Err wraps ErrLockLost and the cause: task.ErrSessionExpired,
// task.ErrClosed, or the node deleted or changed by someone else)".
//
// Contender nodes get an ACL without WRITE (everything else allowed:
// Curator's mutex, which never writes its nodes, works under it). Client 1
// holds, client 0 waits behind it; client 1 releases and client 0 holds.
// Its mark (a setData on its own node) is refused with ErrNoAuth. The
// Held kept the marked version (1) while the node stayed at 0: the node
// watch took it for a write by someone else, the hold was "lost" (nobody
// deleted or changed the node), the node deleted, every fenced write
// refused and client 1 took the lock (this test failed on the code before
// the fix). A mark refused so is now skipped: the Held fences and watches
// at the create's version, and the hold goes on unmarked. "early": the
// holder watches its hold (Err) as soon as it is granted, before the
// mark's reply: the node watch took the version to watch when it was
// set, not once the mark had settled, and the hold was "lost" the same
// way (this subtest failed on the code before that fix).
func TestMarkRefusedByACLIsNoLoss(t *testing.T) {
	t.Run("after", func(t *testing.T) { markRefusedByACL(t, false) })
	t.Run("early", func(t *testing.T) { markRefusedByACL(t, true) })
}

func markRefusedByACL(t *testing.T, early bool) {
	w, _ := newWorld(t, 44, 2, fakezk.Config{})
	const dir = "/locks/noWrite"
	noWrite := []task.ACL{{Perms: task.PermAll &^ task.PermWrite, Scheme: "world", ID: "anyone"}}
	acl := task.ACLProvider(func(p string) []task.ACL {
		if strings.HasPrefix(p, dir+"/") {
			return noWrite
		}
		return nil
	})
	l, err := lock.New(dir, lock.WithACL(acl))
	if err != nil {
		t.Fatal(err)
	}
	h1, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	acquire := l.Acquire()
	if early {
		acquire = c.Then(acquire, func(h *lock.Held) task.Task[*lock.Held] {
			_ = h.Err() // sets the node watch as soon as the hold is granted
			return task.Value(h)
		})
	}
	o := sim.Submit(w, 0, acquire)
	w.Drive()
	if o.Done {
		t.Fatalf("setup: client 0 did not queue: %+v", o)
	}
	if _, err := mustRun(t, w, 1, h1.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("client 0 after client 1 released: %+v", o)
	}
	h := o.V
	_ = h.Err() // sets the node watch
	w.Drive()
	if err := h.Err(); err != nil {
		t.Errorf("hold ended with %v; nobody deleted or wrote its node", err)
	}
	if _, ok := w.NodeStat(h.Path()); !ok {
		t.Errorf("the holder's node %s was deleted while it held", h.Path())
	}
	if _, err := mustRun(t, w, 0, h.Fenced(task.CreateOp("/fenced", nil, task.Persistent))); err != nil {
		t.Errorf("fenced write of the holder: %v", err)
	}
	other := sim.Submit(w, 1, l.TryAcquire())
	w.Drive()
	if other.Done && other.Err == nil {
		t.Errorf("client 1 took the lock: client 0's hold was dropped")
	}
}

// Client: "Acquire and TryAcquire on a Client that holds the lock fail at
// once with ErrAlreadyHeld" (also the ErrAlreadyHeld doc and Acquire's:
// "On a Client that holds the lock it fails at once with ErrAlreadyHeld").
//
// Client 1 holds; goroutines A and B queue, in that order, on one Client
// of client 0 ("Its methods are safe from any goroutine"). Client 1
// releases and A holds; B waits behind A and is canceled; its cleanup's
// delete is sent as client 0's connection is cut for 5 s (the session
// lives). A then calls Acquire again, with a 1 s budget. It did not fail
// at once with ErrAlreadyHeld but waited for B's cleanup (Client.acquire
// waited for pending before it looked at held) and ended with the
// deadline's error (this test failed on the code before the fix). The
// Client now looks at held first.
func TestReentryFailsAtOnceWhileACleanupIsPending(t *testing.T) {
	w, _ := newWorld(t, 42, 2, fakezk.Config{})
	const dir = "/locks/re"
	first, err := mustRun(t, w, 1, mustLock(t, dir).Acquire())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := lock.NewClient(w.Execs[0], dir)
	if err != nil {
		t.Fatal(err)
	}
	var h *lock.Held
	var acqErr, reErr, bErr error
	var reTook time.Duration
	held, proceed, overA, retB := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	w.Go(0, func(a *sim.Actor) {
		defer close(overA)
		h, acqErr = cl.Acquire(a.Context())
		close(held)
		if acqErr != nil || a.Wait(a.Context(), proceed) != nil {
			return
		}
		ctx, cancel := a.WithTimeout(a.Context(), time.Second)
		defer cancel()
		start := w.Clock.Now()
		var h2 *lock.Held
		h2, reErr = cl.Acquire(ctx)
		reTook = w.Clock.Now().Sub(start)
		if reErr == nil {
			_ = cl.Release(a.Context(), h2)
		}
	})
	w.Settle(func() bool { return len(w.Children(dir)) == 2 })
	var cancelB context.CancelFunc
	b := w.Go(0, func(a *sim.Actor) {
		defer close(retB)
		var ctx context.Context
		ctx, cancelB = a.WithCancel(a.Context())
		_, bErr = cl.Acquire(ctx)
	})
	w.Settle(func() bool { return len(w.Children(dir)) == 3 })
	if _, err := mustRun(t, w, 1, first.Release()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return isClosed(held) })
	if acqErr != nil || isClosed(retB) {
		t.Fatalf("setup: A = %v, B returned %v", acqErr, isClosed(retB))
	}
	w.Interrupt(b, cancelB)
	w.Execs[0].RunUntilIdle() // the cleanup's delete is sent
	w.Server.Partition(w.Conns[0], 5*time.Second, false)
	w.Settle(func() bool { return isClosed(retB) })
	if !errors.Is(bErr, task.ErrCanceled) {
		t.Fatalf("setup: B's Acquire = %v, want canceled", bErr)
	}
	close(proceed)
	if !w.Settle(func() bool { return isClosed(overA) }) {
		t.Fatal("A never returned")
	}
	if !errors.Is(reErr, lock.ErrAlreadyHeld) {
		t.Errorf("Acquire on the Client that holds the lock = %v after %v, want ErrAlreadyHeld at once", reErr, reTook)
	}
	if h.Err() != nil {
		t.Fatalf("setup: A's hold ended (%v): the test needs it held", h.Err())
	}
}

package lock_test

import (
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// The fast path (re-acquiring without a listing) must never let a
// contender hold while another does. Each case below sets up the one
// history that would fool a weaker proof; each canary (the weaker proof)
// is shown to fall for it.

// holdRelease has client i take and release l once.
func holdRelease(t *testing.T, w *sim.World, i int, l *lock.Lock) {
	t.Helper()
	h, err := mustRun(t, w, i, l.Acquire())
	if err != nil {
		t.Fatalf("client %d: acquire: %v", i, err)
	}
	if _, err := mustRun(t, w, i, h.Release()); err != nil {
		t.Fatalf("client %d: release: %v", i, err)
	}
}

// dirRecreated: client 0 holds and releases (it was alone: its next node
// would take the fast path); then the empty directory is deleted and
// created again, as the server does to an emptied Curator container, and
// client 1 takes the lock there with number 0. Client 0's next create gets
// number 1, one past its released node's: only the directory watch tells
// it the count started again. It reports whether client 0 acquired while
// client 1 held.
func dirRecreated(t *testing.T) bool {
	w, _ := newWorld(t, 3, 2, fakezk.Config{})
	const dir = "/locks/again"
	l := mustLock(t, dir)
	holdRelease(t, w, 0, l)
	for _, op := range []task.Task[task.Unit]{
		task.Delete(dir, task.AnyVersion),
		c.Map(task.Create(dir, nil, task.Persistent), func(string) task.Unit { return task.Unit{} }),
	} {
		if _, err := mustRun(t, w, 1, op); err != nil {
			t.Fatal(err)
		}
	}
	h1, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	if h1.Seq() != 0 {
		t.Fatalf("client 1 holds number %d, want 0 (a fresh directory)", h1.Seq())
	}
	o := sim.Submit(w, 0, l.Acquire())
	w.Drive()
	both := o.Done && o.Err == nil
	if _, err := mustRun(t, w, 1, h1.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o.Done || o.Err != nil {
		t.Fatalf("client 0 after client 1 released: %+v", o)
	}
	if !both && o.V.Seq() != 1 {
		t.Fatalf("client 0 holds number %d, want 1 (the history this test builds)", o.V.Seq())
	}
	return both
}

func TestFastPathDirectoryRecreated(t *testing.T) {
	if dirRecreated(t) {
		t.Fatal("client 0 acquired while client 1 held (directory recreated under it)")
	}
}

// The same history, but the operator closes the directory to the clients
// before deleting it (and makes it again, open): ZooKeeper withholds the
// directory watch's NodeDeleted from client 0, which may no longer READ
// it, so only the exists sent behind the fast create (the directory's
// czxid) tells it the count started again. On the code before, client 0
// held number 1 while client 1 held number 0 (lock/blocking seed 3733
// with the acl fault class).
func TestFastPathDirectoryRecreatedUnreadable(t *testing.T) {
	w, _ := newWorld(t, 3, 2, fakezk.Config{})
	const dir = "/locks/closed"
	l := mustLock(t, dir)
	holdRelease(t, w, 0, l)
	closed := []task.ACL{task.DigestACL(task.PermAll, "operator", "secret")}
	if err := w.Server.AdminSetACL(dir, closed); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminDelete(dir); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate(dir, nil, 0); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	h1, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	if h1.Seq() != 0 {
		t.Fatalf("client 1 holds number %d, want 0 (a fresh directory)", h1.Seq())
	}
	o := sim.Submit(w, 0, l.Acquire())
	w.Drive()
	if o.Done && o.Err == nil {
		t.Fatalf("client 0 acquired number %d while client 1 held number 0", o.V.Seq())
	}
	if _, err := mustRun(t, w, 1, h1.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o.Done || o.Err != nil {
		t.Fatalf("client 0 after client 1 released: %+v", o)
	}
}

// waiterGaveUp: client 1 holds and releases (alone: fast path armed);
// client 0 takes the lock; client 1's next attempt queues behind it and
// gives up at its deadline, its cleanup deleting its node. Client 1's next
// create gets the number one past that node's; the node never held, so
// client 0 (below it) still does. It reports whether client 1 acquired
// while client 0 held.
func waiterGaveUp(t *testing.T) bool {
	w, _ := newWorld(t, 5, 2, fakezk.Config{})
	l := mustLock(t, "/locks/gaveup")
	holdRelease(t, w, 1, l)
	h0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, c.Timeout(l.Acquire(), time.Second)); err == nil {
		t.Fatal("client 1 acquired while client 0 held (first attempt)")
	}
	w.Drive() // the cleanup deletes the waiter's node
	o := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	both := o.Done && o.Err == nil
	if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o.Done || o.Err != nil {
		t.Fatalf("client 1 after client 0 released: %+v", o)
	}
	return both
}

func TestFastPathAfterWaiterGaveUp(t *testing.T) {
	if waiterGaveUp(t) {
		t.Fatal("client 1 acquired while client 0 held (after its waiting node was cleaned up)")
	}
	if waiterGaveUpLost(t) {
		t.Fatal("client 1 acquired while client 0 held (after its waiting node, found after a lost create reply, was cleaned up)")
	}
}

// waiterGaveUpLost is waiterGaveUp with the reply of client 1's first
// (fast) create lost, the create applied: its node is found by listing
// (no fast path for it), it queues behind client 0 and gives up. A fast
// acquire decides only on the create's number (the listing decides the
// others), so only a number remembered from that node, which never held,
// could fool the next one.
func waiterGaveUpLost(t *testing.T) bool {
	w, _ := newWorld(t, 5, 2, fakezk.Config{})
	l := mustLock(t, "/locks/gaveuplost")
	holdRelease(t, w, 1, l)
	h0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	first := sim.Submit(w, 1, c.Timeout(l.Acquire(), time.Second))
	w.Execs[1].RunUntilIdle()       // the create (and the exists behind it) sent
	w.Server.Drop(w.Conns[1], true) // applied, the replies lost
	if !w.Settle(func() bool { return first.Done }) || first.Err == nil {
		t.Fatalf("client 1's first attempt: %+v, want it to give up at its deadline", first)
	}
	w.Drive() // the cleanup deletes the waiter's node
	o := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	both := o.Done && o.Err == nil
	if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o.Done || o.Err != nil {
		t.Fatalf("client 1 after client 0 released: %+v", o)
	}
	return both
}

// Each weaker proof falls for its history (not parallel: canaries are
// process-wide).
func TestFastPathCanariesCaught(t *testing.T) {
	for _, tc := range []struct {
		name canary.Name
		run  func(*testing.T) bool
	}{
		{lock.FastNoDirWatch, dirRecreated},
	} {
		t.Run(string(tc.name), func(t *testing.T) {
			restore := canary.Enable(tc.name)
			defer restore()
			if !tc.run(t) {
				t.Fatalf("canary %s: two holders not produced", tc.name)
			}
		})
	}
}

// A connection blink forgets what the fast path relies on (a change of
// the directory may not have been heard yet): the next acquire lists,
// and the one after it (alone again) does not.
func TestFastPathForgottenAfterBlink(t *testing.T) {
	w, cnts := newWorld(t, 7, 1, fakezk.Config{})
	l := mustLock(t, "/locks/blink")
	holdRelease(t, w, 0, l)
	holdRelease(t, w, 0, l)
	lists := cnts[0].lists
	holdRelease(t, w, 0, l)
	if got := cnts[0].lists - lists; got != 0 {
		t.Fatalf("%d listings re-acquiring alone, want 0", got)
	}
	w.Server.Drop(w.Conns[0], false)
	w.Drive()
	lists = cnts[0].lists
	holdRelease(t, w, 0, l)
	if got := cnts[0].lists - lists; got != 1 {
		t.Fatalf("%d listings for the first acquire after a blink, want 1", got)
	}
	lists = cnts[0].lists
	holdRelease(t, w, 0, l)
	if got := cnts[0].lists - lists; got != 0 {
		t.Fatalf("%d listings re-acquiring alone after the blink, want 0", got)
	}
	noReportedErrors(t, w)
}

// Contention turns the fast path off: a client whose create's number is
// not its own continuation lists, and while it keeps finding others queued
// it sends the listing behind its create again.
func TestFastPathOffUnderContention(t *testing.T) {
	w, cnts := newWorld(t, 9, 2, fakezk.Config{})
	l := mustLock(t, "/locks/busy")
	holdRelease(t, w, 0, l)
	h1, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	// Client 0 tries the fast path (the create and the directory's
	// exists, no listing), finds a number that is not its own
	// continuation, lists, and queues behind client 1.
	sent, lists := cnts[0].sent, cnts[0].lists
	o := sim.Submit(w, 0, l.Acquire())
	w.Execs[0].RunUntilIdle()
	if got := cnts[0].sent - sent; got != 2 || cnts[0].lists != lists {
		t.Fatalf("%d requests in flight re-acquiring after a hold alone, %d listings, want 2 (the create, the directory's exists) and none", got, cnts[0].lists-lists)
	}
	w.Drive()
	if o.Done {
		t.Fatalf("client 0 acquired while client 1 held: %+v", o)
	}
	if got := cnts[0].lists - lists; got != 1 {
		t.Fatalf("%d listings after a number that is not ours to continue, want 1", got)
	}
	// Client 1 releases and queues again at once: client 0 holds, and
	// sees client 1 behind it.
	rel := sim.Submit(w, 1, h1.Release())
	again := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	if !rel.Done || rel.Err != nil || !o.Done || o.Err != nil || again.Done {
		t.Fatalf("release %+v, client 0 %+v, client 1 again %+v", rel, o, again)
	}
	if _, err := mustRun(t, w, 0, o.V.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !again.Done || again.Err != nil {
		t.Fatalf("client 1 again: %+v", again)
	}
	// Having met contention, client 0's next acquire pipelines the listing.
	sent = cnts[0].sent
	o = sim.Submit(w, 0, l.Acquire())
	w.Execs[0].RunUntilIdle()
	if got := cnts[0].sent - sent; got != 2 {
		t.Fatalf("%d requests in flight after contention, want 2 (create and listing)", got)
	}
	w.Drive()
	if o.Done {
		t.Fatalf("client 0 acquired while client 1 held: %+v", o)
	}
	if _, err := mustRun(t, w, 1, again.V.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o.Done || o.Err != nil {
		t.Fatalf("client 0: %+v", o)
	}
	noReportedErrors(t, w)
}

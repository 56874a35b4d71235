package semaphore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

func TestNewRejectsBadInput(t *testing.T) {
	for _, p := range []string{"", "/", "rel", "/a/", "/a//b"} {
		if _, err := semaphore.New(p, 1); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q, 1) = %v, want ErrInvalidPath", p, err)
		}
	}
	for _, n := range []int{0, -1} {
		if _, err := semaphore.New("/s", n); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("New(/s, %d) = %v, want ErrInvalidArgument", n, err)
		}
	}
	if _, err := semaphore.New("/s", 1, nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("a nil option: %v, want ErrInvalidArgument", err)
	}
	if _, err := semaphore.NewClient(nil, "/s", 1); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("a nil executor: %v, want ErrInvalidArgument", err)
	}
	w, _ := newWorld(t, 1, 1)
	m := mustSem(t, "/s", 2)
	for _, k := range []int{0, -1, 3} {
		if _, err := mustRun(t, w, 0, m.AcquireMany(k)); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("AcquireMany(%d) of 2: %v, want ErrInvalidArgument", k, err)
		}
	}
	if w.Paths() != nil && len(w.Children("/s")) != 0 {
		t.Errorf("bad input created nodes: %v", w.Children("/s"))
	}
}

// Acquire lays out Curator's nodes: the lease node is
// PATH/leases/_c_<uuid>-lease-<seq>, ephemeral, its czxid the token; the
// internal lock (PATH/locks) is released once the lease is held; Release
// deletes the node, and releasing twice is fine.
func TestAcquireRelease(t *testing.T) {
	w, _ := newWorld(t, 1, 1)
	m := mustSem(t, "/app/sem", 3)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	name, ok := strings.CutPrefix(l.Path(), "/app/sem/leases/")
	if !ok || !strings.HasPrefix(name, "_c_") || !strings.HasSuffix(name, "-lease-0000000000") || len(name) != len("_c_")+36+len("-lease-0000000000") {
		t.Errorf("lease node %q", l.Path())
	}
	st, ok := w.Server.NodeStat(l.Path())
	if !ok || st.EphemeralOwner != l.Session().ID || st.Czxid != l.Token() || l.Token() <= 0 || l.Seq() != 0 {
		t.Fatalf("node %v %+v, token %d, seq %d", ok, st, l.Token(), l.Seq())
	}
	if !l.IsHeld() || l.Err() != nil || isClosed(l.Done()) {
		t.Fatal("fresh lease not held")
	}
	if got := w.Children("/app/sem/locks"); len(got) != 0 {
		t.Fatalf("internal lock still held: %v", got)
	}
	for range 2 {
		if _, err := mustRun(t, w, 0, l.Release()); err != nil {
			t.Fatal(err)
		}
	}
	if l.IsHeld() || !errors.Is(l.Err(), semaphore.ErrReleased) || !isClosed(l.Done()) {
		t.Fatalf("after release: held=%v err=%v", l.IsHeld(), l.Err())
	}
	if got := w.Children("/app/sem/leases"); len(got) != 0 {
		t.Fatalf("lease nodes after release: %v", got)
	}
	noReportedErrors(t, w)
}

// With n leases, n acquirers hold at once; the next waits holding the
// internal lock (its lock node in PATH/locks, its lease node counted in
// PATH/leases: Curator's waiter does the same), and holds when one lease
// is returned, then releases the internal lock.
func TestAtMostN(t *testing.T) {
	w, _ := newWorld(t, 2, 4)
	m := mustSem(t, "/s", 2)
	var ls []*semaphore.Lease
	for i := range 2 {
		l, err := mustRun(t, w, i, m.Acquire())
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	o := sim.Submit(w, 2, m.Acquire())
	w.Drive()
	if o.Done {
		t.Fatalf("a third acquirer of 2 leases: %+v", o)
	}
	if got := w.Children("/s/locks"); len(got) != 1 {
		t.Fatalf("the waiter does not hold the internal lock: %v", got)
	}
	if got := w.Children("/s/leases"); len(got) != 3 {
		t.Fatalf("lease nodes while waiting: %v", got)
	}
	// A fourth queues on the internal lock, without a lease node.
	o4 := sim.Submit(w, 3, m.Acquire())
	w.Drive()
	if got := w.Children("/s/leases"); len(got) != 3 || o4.Done {
		t.Fatalf("behind the waiter: lease nodes %v, outcome %+v", got, o4)
	}
	if _, err := mustRun(t, w, 0, ls[0].Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("after a release the waiter: %+v", o)
	}
	w.Drive()
	if o4.Done {
		t.Fatalf("the fourth holds with 2 leases taken: %+v", o4)
	}
	if _, err := mustRun(t, w, 1, ls[1].Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o4.Done }) || o4.Err != nil {
		t.Fatalf("the fourth: %+v", o4)
	}
	w.Drive()
	if got := w.Children("/s/locks"); len(got) != 0 {
		t.Fatalf("internal lock left: %v", got)
	}
	noReportedErrors(t, w)
}

// TryAcquire fails with ErrBusy when no lease is free, and when another
// acquirer holds the internal lock; either way it leaves no node.
func TestTryAcquireBusy(t *testing.T) {
	w, _ := newWorld(t, 3, 3)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.TryAcquire())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, m.TryAcquire()); !errors.Is(err, semaphore.ErrBusy) {
		t.Fatalf("try with the lease taken: %v", err)
	}
	w.Drive()
	if got := w.Children("/s/leases"); len(got) != 1 || len(w.Children("/s/locks")) != 0 {
		t.Fatalf("after a busy try: leases %v locks %v", got, w.Children("/s/locks"))
	}
	o := sim.Submit(w, 2, m.Acquire()) // waits, holding the internal lock
	w.Drive()
	if _, err := mustRun(t, w, 1, m.TryAcquire()); !errors.Is(err, semaphore.ErrBusy) {
		t.Fatalf("try with a waiter ahead: %v", err)
	}
	w.Drive()
	if len(w.Children("/s/leases")) != 2 || len(w.Children("/s/locks")) != 1 {
		t.Fatalf("after a try behind a waiter: leases %v locks %v", w.Children("/s/leases"), w.Children("/s/locks"))
	}
	if _, err := mustRun(t, w, 0, l.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("waiter: %+v", o)
	}
	noReportedErrors(t, w)
}

// A create of the lease node whose reply is lost, applied or not: the
// node is found by its prefix and owner, or created again; either way the
// acquirer ends with exactly one node, and holds.
func TestLostCreateReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		w, drops := newWorld(t, 4, 1)
		m := mustSem(t, "/s", 1)
		drops[0].create, drops[0].under, drops[0].applied, drops[0].armed = true, "/s/leases/", applied, true
		l, err := mustRun(t, w, 0, m.Acquire())
		if err != nil || drops[0].fired != 1 {
			t.Fatalf("applied=%v: %v (drops %d)", applied, err, drops[0].fired)
		}
		if got := w.Children("/s/leases"); len(got) != 1 || "/s/leases/"+got[0] != l.Path() {
			t.Fatalf("applied=%v: lease nodes %v, held %s", applied, got, l.Path())
		}
		noReportedErrors(t, w)
	}
}

// An acquirer whose deadline passes while it waits, or that is canceled,
// leaves no node: its lease node is deleted and the internal lock
// released, also when the reply to that delete is lost (applied or not)
// and when the create's reply was lost before.
func TestGiveUpLeavesNoNode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		loseCreate bool
		loseDelete bool
		applied    bool
	}{
		{"plain", false, false, false},
		{"delete-reply-lost-applied", false, true, true},
		{"delete-reply-lost-unapplied", false, true, false},
		{"create-reply-lost", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, drops := newWorld(t, 5, 2)
			m := mustSem(t, "/s", 1)
			l, err := mustRun(t, w, 0, m.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			d := drops[1]
			d.under, d.applied = "/s/leases/", tc.applied
			if tc.loseCreate {
				d.create, d.armed = true, true
			}
			o := sim.Submit(w, 1, c.Timeout(m.Acquire(), time.Second))
			w.Drive()
			if tc.loseDelete {
				d.create, d.armed = false, true
			}
			if !w.Settle(func() bool { return o.Done && len(w.Children("/s/leases")) == 1 && len(w.Children("/s/locks")) == 0 }) {
				t.Fatalf("outcome %+v, leases %v, locks %v", o, w.Children("/s/leases"), w.Children("/s/locks"))
			}
			if !errors.Is(o.Err, task.ErrDeadlineExceeded) {
				t.Fatalf("waiter: %v", o.Err)
			}
			if (tc.loseCreate || tc.loseDelete) && d.fired != 1 {
				t.Fatalf("the reply was not lost (%d drops)", d.fired)
			}
			if got := w.Children("/s/leases"); "/s/leases/"+got[0] != l.Path() || !l.IsHeld() {
				t.Fatalf("leases %v, holder held %v", got, l.IsHeld())
			}
			noReportedErrors(t, w)
		})
	}
}

// Session expiry: the holder is told (Done, Err), its fenced writes are
// refused, and the waiter gets the lease.
func TestLossOnExpiry(t *testing.T) {
	w, _ := newWorld(t, 6, 2)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 1, m.Acquire())
	w.Drive()
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return isClosed(l.Done()) && o.Done }) {
		t.Fatal("loss not signalled")
	}
	if !errors.Is(l.Err(), semaphore.ErrLeaseLost) || !errors.Is(l.Err(), task.ErrSessionExpired) || l.IsHeld() {
		t.Fatalf("err %v held %v", l.Err(), l.IsHeld())
	}
	if o.Err != nil {
		t.Fatalf("next holder: %+v", o)
	}
	_, err = mustRun(t, w, 0, l.Fenced(&task.CreateRequest{Path: "/data", Mode: task.Persistent}))
	if !errors.Is(err, semaphore.ErrLeaseLost) || !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("fenced write after loss: %v", err)
	}
	if _, err := mustRun(t, w, 1, o.V.Fenced(&task.CreateRequest{Path: "/data", Mode: task.Persistent})); err != nil {
		t.Fatalf("fenced write of the holder: %v", err)
	}
}

// An operator who deletes a holder's lease node ends that lease: the
// holder that asks is told, its fenced writes are refused, and a waiter
// holds.
func TestOperatorDeletesLease(t *testing.T) {
	w, _ := newWorld(t, 7, 2)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Err() // ask: the node is watched from now on
	o := sim.Submit(w, 1, m.Acquire())
	w.Drive()
	if err := w.Server.AdminDelete(l.Path()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return isClosed(l.Done()) && o.Done }) {
		t.Fatal("operator's delete not signalled")
	}
	if !errors.Is(l.Err(), semaphore.ErrLeaseLost) || o.Err != nil {
		t.Fatalf("holder %v, waiter %+v", l.Err(), o)
	}
	if _, err := mustRun(t, w, 0, l.Fenced(&task.CreateRequest{Path: "/data", Mode: task.Persistent})); !errors.Is(err, semaphore.ErrLeaseLost) {
		t.Fatalf("fenced write after the delete: %v", err)
	}
}

// A waiter whose internal lock node an operator deletes gives up at once
// (ErrLeaseLost: it watches that node while it waits) and withdraws its
// lease node: the acquirer that takes the lock after it could otherwise
// wait beside it, each counting the other, with no change to wake either
// (simulation seed 5009757: three acquirers that each thought they held
// the lock, three lease nodes for two leases, no progress).
func TestOperatorDeletesInternalLock(t *testing.T) {
	w, _ := newWorld(t, 8, 3)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	a := sim.Submit(w, 1, m.Acquire())
	w.Drive()
	locks := w.Children("/s/locks")
	if len(locks) != 1 || a.Done {
		t.Fatalf("locks %v, waiter %+v", locks, a)
	}
	if err := w.Server.AdminDelete("/s/locks/" + locks[0]); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return a.Done }) || !errors.Is(a.Err, semaphore.ErrLeaseLost) {
		t.Fatalf("waiter without its lock: %+v", a)
	}
	w.Drive()
	if got := w.Children("/s/leases"); len(got) != 1 || "/s/leases/"+got[0] != l.Path() {
		t.Fatalf("leases after the waiter gave up: %v", got)
	}
	b := sim.Submit(w, 2, m.Acquire())
	w.Drive()
	if b.Done {
		t.Fatalf("b holds with the lease taken: %+v", b)
	}
	if _, err := mustRun(t, w, 0, l.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return b.Done }) || b.Err != nil {
		t.Fatalf("b: %+v", b)
	}
}

// AcquireMany takes k leases; when it cannot get them all by its
// deadline, it returns those it got.
func TestAcquireMany(t *testing.T) {
	w, _ := newWorld(t, 9, 2)
	m := mustSem(t, "/s", 3)
	ls, err := mustRun(t, w, 0, m.AcquireMany(2))
	if err != nil || len(ls) != 2 || ls[0].Path() == ls[1].Path() {
		t.Fatalf("%v %v", ls, err)
	}
	if _, err := mustRun(t, w, 1, c.Timeout(m.AcquireMany(2), time.Second)); !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("two more of 3: %v", err)
	}
	if !w.Settle(func() bool { return len(w.Children("/s/leases")) == 2 && len(w.Children("/s/locks")) == 0 }) {
		t.Fatalf("leases %v locks %v", w.Children("/s/leases"), w.Children("/s/locks"))
	}
	if _, err := mustRun(t, w, 1, m.AcquireMany(1)); err != nil {
		t.Fatal(err)
	}
	noReportedErrors(t, w)
}

// The blocking API: a canceled Acquire leaves no node; Release of a lease
// not taken through a Client is refused with a typed error.
func TestSemaphoreCancel(t *testing.T) {
	w, _ := newWorld(t, 10, 1)
	m := mustSem(t, "/s", 1)
	l, err := mustRun(t, w, 0, m.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := semaphore.NewClient(w.Execs[0], "/s", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Release(context.Background(), l); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Release of a task-acquired lease: %v", err)
	}
	if _, err := cl.Fenced(context.Background(), nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Fenced of a nil lease: %v", err)
	}
}

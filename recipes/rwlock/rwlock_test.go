package rwlock_test

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

func TestNewRejectsBadDirectories(t *testing.T) {
	for _, dir := range []string{"", "/", "rel", "/a/", "/a//b"} {
		if _, err := rwlock.New(dir); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q) = %v, want ErrInvalidPath", dir, err)
		}
	}
	if _, err := rwlock.NewClient(nil, "/a"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient(nil) = %v, want ErrInvalidArgument", err)
	}
}

// The nodes are named as Curator's InterProcessReadWriteLock names them:
// protected ephemeral-sequential children _c_<uuid>-__READ__<seq> and
// _c_<uuid>-__WRIT__<seq>, in one sequence.
func TestNodeNames(t *testing.T) {
	w, _ := newWorld(t, 2)
	l := mustLock(t, "/app/rw")
	r, err := mustRun(t, w, 0, l.AcquireRead())
	if err != nil {
		t.Fatal(err)
	}
	wr := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	names := w.Children("/app/rw")
	uuid := `_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-`
	want := []*regexp.Regexp{regexp.MustCompile("^" + uuid + `__READ__0000000000$`), regexp.MustCompile("^" + uuid + `__WRIT__0000000001$`)}
	slices.SortFunc(names, func(a, b string) int { return int(a[len(a)-1]) - int(b[len(b)-1]) })
	if len(names) != 2 || !want[0].MatchString(names[0]) || !want[1].MatchString(names[1]) {
		t.Fatalf("nodes %v", names)
	}
	st, _ := w.NodeStat("/app/rw/" + names[0])
	if st.EphemeralOwner == 0 || r.Path() != "/app/rw/"+names[0] || r.Mode() != rwlock.Read || r.Seq() != 0 {
		t.Fatalf("reader %s (mode %v, seq %d), owner %#x", r.Path(), r.Mode(), r.Seq(), st.EphemeralOwner)
	}
	if wr.Done {
		t.Fatal("writer holds while a reader does")
	}
	if _, err := mustRun(t, w, 0, r.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return wr.Done }) || wr.Err != nil || wr.V.Mode() != rwlock.Write {
		t.Fatalf("writer after the reader's release: %+v", wr)
	}
}

// Readers share the lock; a writer waits for every reader below it, and
// a reader queued behind a waiting writer waits for it too (writers are
// not starved), even while only readers hold.
func TestReadersShareWritersExclude(t *testing.T) {
	w, _ := newWorld(t, 4)
	l := mustLock(t, "/rw")
	r0, err := mustRun(t, w, 0, l.AcquireRead())
	if err != nil {
		t.Fatal(err)
	}
	r1, err := mustRun(t, w, 1, l.AcquireRead())
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	wr := sim.Submit(w, 2, l.Acquire())
	w.Drive()
	late := sim.Submit(w, 3, l.AcquireRead())
	w.Drive()
	if wr.Done || late.Done {
		t.Fatalf("writer %v or late reader %v holds alongside readers", wr.Done, late.Done)
	}
	// A try behind the waiting writer fails at once and leaves no node.
	if _, err := mustRun(t, w, 3, l.TryAcquireRead()); !errors.Is(err, rwlock.ErrBusy) {
		t.Fatalf("TryAcquireRead behind a writer: %v", err)
	}
	if _, err := mustRun(t, w, 1, r1.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if wr.Done {
		t.Fatal("writer holds while reader 0 still does")
	}
	if _, err := mustRun(t, w, 0, r0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return wr.Done }) || wr.Err != nil {
		t.Fatalf("writer: %+v", wr)
	}
	if late.Done {
		t.Fatal("the late reader holds with the writer")
	}
	if wr.V.Token() <= r0.Token() || wr.V.Token() <= r1.Token() {
		t.Fatalf("writer token %d not above the readers' %d, %d", wr.V.Token(), r0.Token(), r1.Token())
	}
	if _, err := mustRun(t, w, 2, wr.V.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return late.Done }) || late.Err != nil {
		t.Fatalf("late reader: %+v", late)
	}
	if late.V.Token() <= wr.V.Token() {
		t.Fatal("reader after the writer has a smaller token")
	}
	if _, err := mustRun(t, w, 3, late.V.Release()); err != nil {
		t.Fatal(err)
	}
	if got := w.Children("/rw"); len(got) != 0 {
		t.Fatalf("nodes left: %v", got)
	}
	noReportedErrors(t, w)
}

// TryAcquire fails with ErrBusy behind a reader, leaving no node, and
// succeeds on a free lock.
func TestTryAcquire(t *testing.T) {
	w, _ := newWorld(t, 2)
	l := mustLock(t, "/rw")
	r, err := mustRun(t, w, 0, l.TryAcquireRead())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, l.TryAcquire()); !errors.Is(err, rwlock.ErrBusy) {
		t.Fatalf("TryAcquire behind a reader: %v", err)
	}
	w.Drive()
	if got := w.Children("/rw"); len(got) != 1 {
		t.Fatalf("nodes after a busy try: %v", got)
	}
	if _, err := mustRun(t, w, 0, r.Release()); err != nil {
		t.Fatal(err)
	}
	h, err := mustRun(t, w, 1, l.TryAcquire())
	if err != nil || h.Mode() != rwlock.Write {
		t.Fatalf("TryAcquire on a free lock: %v", err)
	}
}

// No herd: a writer waits on the contender right below it, a reader on
// the nearest writer below it; so a writer's release wakes only those
// who may hold next. With W0 holding, then R1, W2, R3, R4 queued: R1
// watches W0, W2 watches R1, R3 and R4 watch W2 (not W0, as Curator's
// readers do: they would wake for nothing when W0 goes).
func TestEachWaiterWatchesOneNode(t *testing.T) {
	if err := watchLayout(t); err != nil {
		t.Fatal(err)
	}
}

// Curator's reader rule, switched on as a canary (it watches the lowest
// writer), fails TestEachWaiterWatchesOneNode's layout.
func TestHerdCanaryCaught(t *testing.T) {
	defer canary.Enable(rwlock.WatchLowestWriter)()
	err := watchLayout(t)
	if err == nil {
		t.Fatal("readers watching the lowest writer not caught")
	}
	t.Logf("caught: %v", err)
}

// watchLayout builds TestEachWaiterWatchesOneNode's queue and returns the
// first way the waiters' watches and wake-ups differ from the protocol's.
func watchLayout(t *testing.T) error {
	w, ws := newWorld(t, 5)
	l := mustLock(t, "/rw")
	w0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	r1 := sim.Submit(w, 1, l.AcquireRead())
	w.Drive()
	w2 := sim.Submit(w, 2, l.Acquire())
	w.Drive()
	r3 := sim.Submit(w, 3, l.AcquireRead())
	r4 := sim.Submit(w, 4, l.AcquireRead())
	w.Drive()
	node := func(seq string) string {
		for _, n := range w.Children("/rw") {
			if n[len(n)-10:] == seq {
				return "/rw/" + n
			}
		}
		t.Fatalf("no node %s", seq)
		return ""
	}
	want := map[int]string{1: node("0000000000"), 2: node("0000000001"), 3: node("0000000002"), 4: node("0000000002")}
	for i := 1; i <= 4; i++ {
		if got := ws[i].watched(); !slices.Equal(got, []string{want[i]}) {
			return fmt.Errorf("client %d watches %v, want %s", i, got, want[i])
		}
	}
	lists := ws[3].lists + ws[4].lists
	if _, err := mustRun(t, w, 0, w0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return r1.Done }) || r1.Err != nil {
		t.Fatalf("r1: %+v", r1)
	}
	w.Drive()
	if ws[3].lists+ws[4].lists != lists || r3.Done || r4.Done || w2.Done {
		return fmt.Errorf("W0's release woke the readers behind W2 (%d listings)", ws[3].lists+ws[4].lists-lists)
	}
	// R1 goes: W2 lists once (R1 was not the lowest when W2 listed) and
	// holds.
	wl := ws[2].lists
	if _, err := mustRun(t, w, 1, r1.V.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return w2.Done }) || w2.Err != nil || ws[2].lists != wl+1 {
		return fmt.Errorf("w2: %+v, %d listings more", w2, ws[2].lists-wl)
	}
	// W2 goes: R3 and R4 both hold, each after one listing.
	if _, err := mustRun(t, w, 2, w2.V.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return r3.Done && r4.Done }) || r3.Err != nil || r4.Err != nil {
		t.Fatalf("r3 %+v, r4 %+v", r3, r4)
	}
	if ws[3].lists+ws[4].lists != lists+2 {
		return fmt.Errorf("the readers listed %d times after their writer went, want 2", ws[3].lists+ws[4].lists-lists)
	}
	return nil
}

// A waiter whose watched node was the head of its listing holds when it
// goes, without listing again: W0 holds, R1 waits on it, W2 on R1.
func TestHeadGoesHoldsWithoutListing(t *testing.T) {
	w, ws := newWorld(t, 3)
	l := mustLock(t, "/rw")
	w0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	r1 := sim.Submit(w, 1, l.AcquireRead())
	w.Drive()
	lists := ws[1].lists
	if _, err := mustRun(t, w, 0, w0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return r1.Done }) || r1.Err != nil || ws[1].lists != lists {
		t.Fatalf("r1: %+v, %d listings more", r1, ws[1].lists-lists)
	}
	w2 := sim.Submit(w, 2, l.Acquire())
	w.Drive()
	lists = ws[2].lists
	if _, err := mustRun(t, w, 1, r1.V.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return w2.Done }) || w2.Err != nil || ws[2].lists != lists {
		t.Fatalf("w2: %+v, %d listings more", w2, ws[2].lists-lists)
	}
}

// A reader watching a writer that is not the lowest writer lists again
// when it goes: W0 holds, W1 and R2 wait; W1 gives up (timeout); R2 must
// not hold while W0 does.
func TestReaderListsWhenUpperWriterGoes(t *testing.T) {
	w, _ := newWorld(t, 3)
	l := mustLock(t, "/rw")
	w0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	w1 := sim.Submit(w, 1, c.Timeout(l.Acquire(), time.Second))
	w.Drive()
	r2 := sim.Submit(w, 2, l.AcquireRead())
	if !w.Settle(func() bool { return w1.Done }) || !errors.Is(w1.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("w1: %+v", w1)
	}
	w.Drive()
	if r2.Done {
		t.Fatal("the reader holds while W0 does")
	}
	if _, err := mustRun(t, w, 0, w0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return r2.Done }) || r2.Err != nil {
		t.Fatalf("r2: %+v", r2)
	}
	if got := w.Children("/rw"); len(got) != 1 {
		t.Fatalf("nodes: %v (the timed-out writer's node must be gone)", got)
	}
	noReportedErrors(t, w)
}

// A reader that gives up behind a writer (deadline) leaves no node: the
// cleanup deletes it.
func TestCleanupOnTimeout(t *testing.T) {
	w, _ := newWorld(t, 2)
	l := mustLock(t, "/rw")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	for _, acq := range []task.Task[*rwlock.Held]{l.AcquireRead(), l.Acquire()} {
		if _, err := mustRun(t, w, 1, c.Timeout(acq, time.Second)); !errors.Is(err, task.ErrDeadlineExceeded) {
			t.Fatalf("acquire behind a writer: %v", err)
		}
		w.Drive()
		if got := w.Children("/rw"); len(got) != 1 {
			t.Fatalf("nodes after a timeout: %v", got)
		}
	}
	if _, err := mustRun(t, w, 0, h.Release()); err != nil {
		t.Fatal(err)
	}
	noReportedErrors(t, w)
}

// A lost create reply (connection dropped after the server applied it)
// is settled by the prefix: one node, ours, and the lock held.
func TestLostCreateReply(t *testing.T) {
	for _, applied := range []bool{false, true} {
		w, _ := newWorld(t, 1)
		l := mustLock(t, "/rw")
		o := sim.Submit(w, 0, l.AcquireRead())
		w.Server.Drop(w.Conns[0], applied)
		if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
			t.Fatalf("applied=%v: %+v", applied, o)
		}
		if got := w.Children("/rw"); len(got) != 1 || "/rw/"+got[0] != o.V.Path() {
			t.Fatalf("applied=%v: nodes %v, held %s", applied, got, o.V.Path())
		}
	}
}

// A holder is told of its session's expiry (Done, Err), and its fenced
// writes are refused; a holder whose node an operator deletes is told
// too (the node watch, set by the first Done, Err or IsHeld).
func TestLossSignalled(t *testing.T) {
	w, _ := newWorld(t, 2)
	l := mustLock(t, "/rw")
	r, err := mustRun(t, w, 0, l.AcquireRead())
	if err != nil {
		t.Fatal(err)
	}
	wr := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	if !r.IsHeld() {
		t.Fatal("fresh lock not held")
	}
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return isClosed(r.Done()) }) || !errors.Is(r.Err(), rwlock.ErrLockLost) || !errors.Is(r.Err(), task.ErrSessionExpired) {
		t.Fatalf("after expiry: %v", r.Err())
	}
	if _, err := mustRun(t, w, 0, r.Fenced(&task.CreateRequest{Path: "/x", Mode: task.Persistent})); !errors.Is(err, rwlock.ErrLockLost) {
		t.Fatalf("fenced write after expiry: %v", err)
	}
	if !w.Settle(func() bool { return wr.Done }) || wr.Err != nil {
		t.Fatalf("writer after the reader's expiry: %+v", wr)
	}
	h := wr.V
	_ = h.Err() // sets the node watch
	w.Drive()
	if err := w.Server.AdminDelete(h.Path()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return isClosed(h.Done()) }) || !errors.Is(h.Err(), rwlock.ErrLockLost) {
		t.Fatalf("after the operator's delete: %v", h.Err())
	}
	if _, err := mustRun(t, w, 1, h.Release()); err != nil {
		t.Fatalf("release of a lost lock: %v", err)
	}
	if !errors.Is(h.Err(), rwlock.ErrLockLost) {
		t.Fatalf("a release hid the loss: %v", h.Err())
	}
}

// Nodes of other recipes in the directory (Curator's InterProcessMutex
// "-lock-" nodes, kazoo's "__lock__" nodes, stray names) are not
// contenders: ignored, never an error.
func TestForeignNodesIgnored(t *testing.T) {
	w, _ := newWorld(t, 1)
	l := mustLock(t, "/rw")
	for _, p := range []string{"/rw", "/rw/_c_x-lock-0000000000", "/rw/abc__lock__0000000001", "/rw/stray", "/rw/__WRIT__x"} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	if h.Seq() != 4 {
		t.Fatalf("seq %d", h.Seq())
	}
}

// Sequence wrap-around: a contender the server numbers 2147483647 does
// not queue (it could tie with others); it waits until the directory is
// empty, deletes it and starts again from 0, while the fencing token
// keeps growing.
func TestSequenceExhausted(t *testing.T) {
	w, _ := newWorld(t, 2)
	l := mustLock(t, "/rw")
	for _, p := range []string{"/rw"} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.SetCounters("/rw", 0, math.MaxInt32-1); err != nil {
		t.Fatal(err)
	}
	first, err := mustRun(t, w, 0, l.AcquireRead())
	if err != nil || first.Seq() != math.MaxInt32-1 {
		t.Fatalf("first: %v", err)
	}
	second := sim.Submit(w, 1, l.AcquireRead())
	w.Drive()
	if second.Done {
		t.Fatalf("a reader with an exhausted number holds: %+v", second)
	}
	if _, err := mustRun(t, w, 0, first.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("second: %+v", second)
	}
	if second.V.Seq() != 0 || second.V.Token() <= first.Token() {
		t.Fatalf("second: seq %d token %d (first's %d)", second.V.Seq(), second.V.Token(), first.Token())
	}
	noReportedErrors(t, w)
}

package lock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

func mustLock(t *testing.T, dir string) *lock.Lock {
	t.Helper()
	l, err := lock.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func noReportedErrors(t *testing.T, w *sim.World) {
	t.Helper()
	for _, err := range w.Errs {
		t.Errorf("detached flow failed: %v", err)
	}
}

func TestNewRejectsBadDirectories(t *testing.T) {
	for _, dir := range []string{"", "/", "rel", "/a/", "/a//b"} {
		if _, err := lock.New(dir); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q) = %v, want ErrInvalidPath", dir, err)
		}
	}
}

// Acquire creates the directory, names the node _c_<uuid>-lock-<seq>, and
// Release deletes it; releasing twice is fine.
func TestAcquireRelease(t *testing.T) {
	w, _ := newWorld(t, 1, 1, fakezk.Config{})
	l := mustLock(t, "/app/locks/a")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	name := h.Path()[len("/app/locks/a/"):]
	if !strings.HasPrefix(name, "_c_") || !strings.HasSuffix(name, "-lock-0000000000") || len(name) != len("_c_")+36+len("-lock-0000000000") {
		t.Errorf("node name %q", name)
	}
	st, ok := w.Server.NodeStat(h.Path())
	if !ok || st.EphemeralOwner != h.Session().ID || st.Czxid != h.Token() || h.Token() <= 0 {
		t.Fatalf("node %v %+v, token %d, session %v", ok, st, h.Token(), h.Session())
	}
	if !h.IsHeld() || h.Err() != nil || isClosed(h.Done()) {
		t.Fatal("fresh lock not held")
	}
	for range 2 {
		if _, err := mustRun(t, w, 0, h.Release()); err != nil {
			t.Fatal(err)
		}
	}
	if h.IsHeld() || !errors.Is(h.Err(), lock.ErrUnlocked) || !isClosed(h.Done()) {
		t.Fatalf("after release: held=%v err=%v", h.IsHeld(), h.Err())
	}
	if got := w.Children("/app/locks/a"); len(got) != 0 {
		t.Fatalf("children after release: %v", got)
	}
	noReportedErrors(t, w)
}

// An uncontended acquire takes one round trip: the listing goes out right
// behind the create, before its reply, and is used because it shows the
// new node; nothing else is sent before the lock is held (the watch on the
// directory that the fast path relies on is set once the lock is held).
// Once a hold of this session was released, re-acquiring sends the
// create with a plain exists of the directory behind it (its incarnation),
// and the create's number (one past the released node's) is the proof
// that no one else queued: no listing at all, one round trip.
func TestAcquirePipelinesCreateAndListing(t *testing.T) {
	w, cnts := newWorld(t, 14, 1, fakezk.Config{})
	l := mustLock(t, "/locks/one")
	for _, p := range []string{"/locks", "/locks/one"} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	sent, lists := cnts[0].sent, cnts[0].lists
	o := sim.Submit(w, 0, l.Acquire())
	w.Execs[0].RunUntilIdle() // the client sends; the server has not answered
	if got := cnts[0].sent - sent; got != 2 || o.Done {
		t.Fatalf("%d requests in flight before the first reply, want 2 (create and listing)", got)
	}
	w.Drive()
	if !o.Done || o.Err != nil {
		t.Fatalf("acquire: %+v", o)
	}
	if got := cnts[0].lists - lists; got != 1 {
		t.Fatalf("%d listings for an uncontended acquire, want 1", got)
	}
	if _, err := mustRun(t, w, 0, o.V.Release()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	for round := range 3 {
		sent, lists = cnts[0].sent, cnts[0].lists
		o = sim.Submit(w, 0, l.Acquire())
		w.Execs[0].RunUntilIdle()
		if got := cnts[0].sent - sent; got != 2 || o.Done {
			t.Fatalf("re-acquire %d: %d requests in flight before the first reply, want 2 (the create, the directory's exists)", round, got)
		}
		w.Drive()
		if !o.Done || o.Err != nil {
			t.Fatalf("re-acquire %d: %+v", round, o)
		}
		if got := cnts[0].lists - lists; got != 0 {
			t.Fatalf("re-acquire %d: %d listings, want 0", round, got)
		}
		if got := cnts[0].sent - sent; got != 2 {
			t.Fatalf("re-acquire %d: %d requests, want 2", round, got)
		}
		if _, err := mustRun(t, w, 0, o.V.Release()); err != nil {
			t.Fatal(err)
		}
	}
	noReportedErrors(t, w)
}

// Waiters queue in creation order, and one release wakes one waiter only:
// the next one, which holds on the notification without listing (its
// predecessor was marked when it held: see Handoff in one round trip); no
// other client sends a request. With the handoff of before the mark
// (WithListingHandoff) the woken waiter lists once more, unless its
// predecessor was the lowest contender when it listed.
func TestNoHerd(t *testing.T) {
	t.Run("marked", func(t *testing.T) { noHerd(t, func(int) int { return 0 }) })
	t.Run("listing", func(t *testing.T) {
		noHerd(t, func(j int) int {
			if j == 1 {
				return 0
			}
			return 1
		}, lock.WithListingHandoff())
	})
}

func noHerd(t *testing.T, wantLists func(j int) int, opts ...lock.Option) {
	const n = 6
	w, cnts := newWorld(t, 2, n, fakezk.Config{})
	l, err := lock.New("/locks/herd", opts...)
	if err != nil {
		t.Fatal(err)
	}
	held := make([]*sim.Outcome[*lock.Held], n)
	for i := range n {
		held[i] = sim.Submit(w, i, l.Acquire())
		w.Drive()
	}
	if !held[0].Done || held[0].Err != nil {
		t.Fatalf("first client: %+v", held[0])
	}
	for i := 1; i < n; i++ {
		if held[i].Done {
			t.Fatalf("client %d acquired while client 0 holds", i)
		}
	}
	var last int64
	for i := range n {
		h := held[i].V
		if h.Token() <= last {
			t.Fatalf("token %d after %d", h.Token(), last)
		}
		last = h.Token()
		sent, lists := make([]int, n), make([]int, n)
		for j := range n {
			sent[j], lists[j] = cnts[j].sent, cnts[j].lists
		}
		if _, err := mustRun(t, w, i, h.Release()); err != nil {
			t.Fatal(err)
		}
		w.Drive()
		// Only the next one is woken.
		for j := range n {
			switch {
			case j == i:
			case j == i+1:
				want := wantLists(j)
				if got := cnts[j].lists - lists[j]; got != want {
					t.Errorf("release by client %d: client %d listed %d times, want %d", i, j, got, want)
				}
			default:
				if got := cnts[j].sent - sent[j]; got != 0 {
					t.Errorf("release by client %d: client %d sent %d requests, want 0", i, j, got)
				}
			}
		}
		if i+1 < n && (!held[i+1].Done || held[i+1].Err != nil) {
			t.Fatalf("client %d did not get the lock after client %d released: %+v", i+1, i, held[i+1])
		}
		for j := i + 2; j < n; j++ {
			if held[j].Done {
				t.Fatalf("client %d acquired out of turn", j)
			}
		}
	}
	noReportedErrors(t, w)
}

// A deadline that passes while waiting ends the attempt, and its node is
// deleted by the cleanup, not left behind.
func TestDeadlineWhileWaitingLeavesNoNode(t *testing.T) {
	w, _ := newWorld(t, 3, 2, fakezk.Config{})
	l := mustLock(t, "/locks/d")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustRun(t, w, 1, c.Timeout(l.Acquire(), time.Second))
	if !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("acquire past its deadline: %v", err)
	}
	w.Drive()
	if got := w.Children("/locks/d"); len(got) != 1 || "/locks/d/"+got[0] != h.Path() {
		t.Fatalf("children %v, want only the holder's %s", got, h.Path())
	}
	// Canceled the same way: Flow.Cancel.
	var canceled error
	f := executor.Submit(w.Execs[1], l.Acquire(), func(_ *lock.Held, err error) { canceled = err })
	w.Drive()
	if len(w.Children("/locks/d")) != 2 {
		t.Fatal("second contender not queued")
	}
	f.Cancel()
	w.Drive()
	if !errors.Is(canceled, task.ErrCanceled) {
		t.Fatalf("canceled acquire: %v", canceled)
	}
	if got := w.Children("/locks/d"); len(got) != 1 || "/locks/d/"+got[0] != h.Path() {
		t.Fatalf("children after cancel %v, want only the holder's %s", got, h.Path())
	}
	noReportedErrors(t, w)
}

// A create whose reply is lost to connection loss, applied or not: the
// attempt finds its node by prefix and owner (or creates again), and ends
// up holding exactly one node.
func TestLostCreateReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		w, _ := newWorld(t, 4, 1, fakezk.Config{})
		l := mustLock(t, "/locks/c")
		if _, err := mustRun(t, w, 0, task.Create("/locks", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		if _, err := mustRun(t, w, 0, task.Create("/locks/c", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		o := sim.Submit(w, 0, l.Acquire())
		w.Execs[0].RunUntilIdle() // the create is in flight
		w.Server.Drop(w.Conns[0], applied)
		if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
			t.Fatalf("applied=%v: %+v", applied, o)
		}
		got := w.Children("/locks/c")
		if len(got) != 1 || "/locks/c/"+got[0] != o.V.Path() {
			t.Fatalf("applied=%v: children %v, held %s", applied, got, o.V.Path())
		}
		noReportedErrors(t, w)
	}
}

// A create whose reply is lost while the client is cut off, and the
// deadline passes before it reconnects: the cleanup finds the node by its
// prefix after the reconnect and deletes it.
func TestLostCreateReplyThenDeadline(t *testing.T) {
	for _, applied := range []bool{true, false} {
		w, _ := newWorld(t, 5, 2, fakezk.Config{})
		l := mustLock(t, "/locks/p")
		h, err := mustRun(t, w, 0, l.Acquire())
		if err != nil {
			t.Fatal(err)
		}
		o := sim.Submit(w, 1, c.Timeout(l.Acquire(), time.Second))
		w.Execs[1].RunUntilIdle() // the create is in flight
		w.Server.Partition(w.Conns[1], 3*time.Second, applied)
		w.Drive()
		if n := len(w.Children("/locks/p")); n != map[bool]int{true: 2, false: 1}[applied] {
			t.Fatalf("applied=%v: %d children after the partition", applied, n)
		}
		if !w.Settle(func() bool { return o.Done && w.Conns[1].Connected() && len(w.Children("/locks/p")) == 1 }) {
			t.Fatalf("applied=%v: outcome %+v, children %v", applied, o, w.Children("/locks/p"))
		}
		if !errors.Is(o.Err, task.ErrDeadlineExceeded) {
			t.Fatalf("applied=%v: %v", applied, o.Err)
		}
		if got := w.Children("/locks/p"); "/locks/p/"+got[0] != h.Path() {
			t.Fatalf("applied=%v: children %v", applied, got)
		}
		if w.Server.Sessions() == nil || !h.IsHeld() {
			t.Fatal("holder lost its lock")
		}
		noReportedErrors(t, w)
	}
}

// Session expiry: the holder is told (Done, Err), its fenced writes are
// rejected, and another client gets the lock with a larger token.
func TestLossOnExpiry(t *testing.T) {
	w, _ := newWorld(t, 6, 2, fakezk.Config{})
	l := mustLock(t, "/locks/e")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return isClosed(h.Done()) && o.Done }) {
		t.Fatal("loss not signalled")
	}
	if !errors.Is(h.Err(), lock.ErrLockLost) || !errors.Is(h.Err(), task.ErrSessionExpired) || h.IsHeld() {
		t.Fatalf("err %v held %v", h.Err(), h.IsHeld())
	}
	if o.Err != nil || o.V.Token() <= h.Token() {
		t.Fatalf("next holder: %+v (old token %d)", o, h.Token())
	}
	_, err = mustRun(t, w, 0, h.Fenced(&task.CreateRequest{Path: "/data", Mode: task.Persistent, ACL: task.OpenACL}))
	if !errors.Is(err, lock.ErrLockLost) || !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("fenced write after loss: %v", err)
	}
	if _, ok := w.Server.NodeStat("/data"); ok {
		t.Fatal("fenced write applied after loss")
	}
	if _, err := mustRun(t, w, 0, h.Release()); err != nil {
		t.Fatalf("release of a lost lock: %v", err)
	}
	if !errors.Is(h.Err(), lock.ErrLockLost) {
		t.Fatalf("release rewrote the loss: %v", h.Err())
	}
	noReportedErrors(t, w)
}

// Someone else deletes the node while the holder has not heard of it yet:
// the fenced write is rejected by the server, and the loss is signalled.
func TestFencedWriteRejectedByServer(t *testing.T) {
	w, _ := newWorld(t, 7, 2, fakezk.Config{})
	l := mustLock(t, "/locks/f")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := mustRun(t, w, 0, h.Fenced(&task.CreateRequest{Path: "/data", Mode: task.Persistent, ACL: task.OpenACL})); err != nil || len(res) != 1 || res[0].Path != "/data" {
		t.Fatalf("fenced write while held: %v %+v", err, res)
	}
	w.Server.Delay(w.Conns[0], time.Second) // the holder hears nothing for a second
	if _, err := mustRun(t, w, 1, task.Delete(h.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !h.IsHeld() {
		t.Fatal("holder heard of the delete through a delay")
	}
	_, err = mustRun(t, w, 0, h.Fenced(&task.SetDataRequest{Path: "/data", Data: []byte("late"), Version: task.AnyVersion}))
	if !errors.Is(err, lock.ErrLockLost) || !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("late fenced write: %v", err)
	}
	if st, _ := w.Server.NodeStat("/data"); st.Version != 0 {
		t.Fatal("late fenced write applied")
	}
	if !isClosed(h.Done()) || !errors.Is(h.Err(), lock.ErrLockLost) {
		t.Fatalf("loss not signalled: %v", h.Err())
	}
	// An op of the caller's that fails is reported with its own index.
	h2, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustRun(t, w, 1, h2.Fenced(&task.SetDataRequest{Path: "/data", Version: 7}))
	var me *task.MultiError
	if !errors.As(err, &me) || me.Index != 0 || !errors.Is(err, task.ErrBadVersion) || errors.Is(err, lock.ErrLockLost) {
		t.Fatalf("failing user op: %v", err)
	}
	if !h2.IsHeld() {
		t.Fatal("a failing user op cost the lock")
	}
	noReportedErrors(t, w)
}

// While the session is suspended the lock is uncertain (IsHeld false,
// not lost); on reconnect to the same session it is held again.
func TestSuspendedIsUncertain(t *testing.T) {
	w, _ := newWorld(t, 8, 1, fakezk.Config{})
	l := mustLock(t, "/locks/s")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	w.Server.Partition(w.Conns[0], 2*time.Second, false)
	w.Drive()
	if h.IsHeld() || h.Err() != nil {
		t.Fatalf("suspended: held=%v err=%v", h.IsHeld(), h.Err())
	}
	if !w.Settle(h.IsHeld) {
		t.Fatal("not held again after reconnect")
	}
	if h.Err() != nil || isClosed(h.Done()) {
		t.Fatalf("reconnect ended the lock: %v", h.Err())
	}
}

// Children that are not contenders (kazoo's, stray names) are ignored;
// a Curator-style contender of another client is waited for.
func TestForeignChildren(t *testing.T) {
	w, _ := newWorld(t, 9, 2, fakezk.Config{})
	l := mustLock(t, "/locks/x")
	for _, p := range []string{"/locks", "/locks/x", "/locks/x/stray", "/locks/x/lock-", "/locks/x/a-lock-12x",
		"/locks/x/b-lock-12345678901", "/locks/x/0123456789abcdef__lock__0000000000"} {
		if _, err := mustRun(t, w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	curator, err := mustRun(t, w, 1, task.Create("/locks/x/_c_0bad0bad-0000-0000-0000-000000000000-lock-", nil, task.EphemeralSequential))
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, l.Acquire())
	w.Drive()
	if o.Done {
		t.Fatalf("acquired past a lower Curator contender: %+v", o)
	}
	if _, err := mustRun(t, w, 1, task.Delete(curator, task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("after the Curator node went: %+v", o)
	}
	if _, err := mustRun(t, w, 0, o.V.Release()); err != nil {
		t.Fatal(err)
	}
	if got := w.Children("/locks/x"); len(got) != 5 {
		t.Fatalf("foreign children touched: %v", got)
	}
	noReportedErrors(t, w)
}

// middleGaveUp: client 0 holds; client 1 waits with a deadline, client 2
// behind it. Client 1's deadline passes and its node is deleted: client 2
// is woken, but its predecessor was not the lowest contender, so it lists
// and waits for client 0. It reports whether client 2 acquired while
// client 0 held.
func middleGaveUp(t *testing.T) bool {
	w, _ := newWorld(t, 4, 3, fakezk.Config{})
	l := mustLock(t, "/locks/middle")
	h0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, c.Timeout(l.Acquire(), time.Second))
	w.Drive()
	o2 := sim.Submit(w, 2, l.Acquire())
	w.Drive()
	if !w.Settle(func() bool { return o1.Done }) || !errors.Is(o1.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("client 1: %+v, want its deadline", o1)
	}
	w.Drive()
	both := o2.Done && o2.Err == nil
	if _, err := mustRun(t, w, 0, h0.Release()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o2.Done }) || o2.Err != nil {
		t.Fatalf("client 2 after client 0 released: %+v", o2)
	}
	return both
}

func TestMiddleWaiterGivesUp(t *testing.T) {
	if middleGaveUp(t) {
		t.Fatal("client 2 acquired while client 0 held (its predecessor, a waiter, gave up)")
	}
}

func TestMiddleWaiterCanaryCaught(t *testing.T) {
	restore := canary.Enable(lock.HoldOnAnyPred)
	defer restore()
	if !middleGaveUp(t) {
		t.Fatal("canary lock/hold-when-any-predecessor-goes: two holders not produced")
	}
}

// A holder that never asked Done, Err or IsHeld (so its node is not
// watched) is still told when its executor stops: the lock ends with
// ErrLockLost wrapping task.ErrClosed, and Done is closed.
func TestHeldEndsWhenExecutorStops(t *testing.T) {
	w, _, err := newCounted(21, 1, fakezk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := mustRun(t, w, 0, mustLock(t, "/locks/stop").Acquire())
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	if !isClosed(h.Done()) || !errors.Is(h.Err(), lock.ErrLockLost) || !errors.Is(h.Err(), task.ErrClosed) {
		t.Fatalf("after the executor stopped: done %v, err %v", isClosed(h.Done()), h.Err())
	}
	if n := lock.WatchedSessions(w.Execs[0]); n != 0 {
		t.Fatalf("fast-path state kept for %d sessions after the executor stopped", n)
	}
	if lock.KeepsHolders(w.Execs[0]) {
		t.Fatal("holders kept after the executor stopped")
	}
}

// A release whose caller's deadline passes while its delete is lost in a
// partition returns the deadline's error (naming the delete) and the
// delete goes on in the background: the node goes once the partition
// heals, within the session, not at its expiry.
func TestReleaseDeadlineDeleteGoesOn(t *testing.T) {
	w, _ := newWorld(t, 3, 1, fakezk.Config{})
	l := mustLock(t, "/app/locks/d")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	sess := h.Session().ID
	w.Server.Partition(w.Conns[0], 2*time.Second, false)
	_, err = mustRun(t, w, 0, c.Timeout(h.Release(), time.Second))
	if !errors.Is(err, task.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "zk delete "+h.Path()) {
		t.Fatalf("Release = %v, want the deadline naming the delete of %s", err, h.Path())
	}
	w.Settle(func() bool { return len(w.Children("/app/locks/d")) == 0 })
	if got := w.Children("/app/locks/d"); len(got) != 0 {
		t.Fatalf("children after the partition healed: %v", got)
	}
	if cur, _ := w.Execs[0].Current(); cur.ID != sess {
		t.Fatalf("session changed (%#x to %#x): the node went with it, not by the release", sess, cur.ID)
	}
	noReportedErrors(t, w)
}

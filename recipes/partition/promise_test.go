package partition_test

// Promises of the package's docs that an adversarial review found broken:
// each test's comment gives the promise and the schedule that broke it
// (every test here fails on the code before the fix).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

func heldItems(m *partition.Member) []string {
	var out []string
	for _, h := range m.Held() {
		out = append(out, h.Item)
	}
	return out
}

// Member.Leave: "it gives up every item (deleting its lock nodes, so the
// next contenders hold at once) and leaves the party (deleting its
// node) ... Leave is idempotent"; package doc: "a member that leaves
// gives its items up ... and the others take them once the party shows
// it gone"; State Ended: "(Leave, the executor closed, an error no retry
// settles) ... It holds nothing."
//
// Schedule: items a, b, c; c's lock directory was made (by someone else)
// with an ACL that refuses creates. m0 joins alone, takes a and b, and
// its create under c fails with NoAuth: the member ends with that error
// (State Ended). Its user gives it back with Leave, which succeeds. Then
// c's directory is fixed (deleted: it is empty) and m1 joins: it should
// be alone in the party and take a, b and c.
func TestLeaveAfterAnErrorEndGivesUpTheNodes(t *testing.T) {
	w := newWorld(t, 1, 2)
	p, err := partition.New("/e", []string{"a", "b", "c"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, zkops.EnsurePath("/e/locks", nil)); err != nil {
		t.Fatal(err)
	}
	noCreate := []task.ACL{{Perms: task.PermRead | task.PermDelete | task.PermAdmin, Scheme: "world", ID: "anyone"}}
	if _, err := sim.Run(w, 1, task.CreateWith(&task.CreateRequest{Path: p.ItemDir("c"), Mode: task.Persistent, ACL: noCreate})); err != nil {
		t.Fatal(err)
	}
	m0 := join(t, w, p, 0)
	if !w.Settle(func() bool { return m0.Err() != nil }) {
		t.Fatalf("m0 did not end: state %v, held %v", m0.State(), heldItems(m0))
	}
	if !errors.Is(m0.Err(), task.ErrNoAuth) || m0.State() != partition.Ended {
		t.Fatalf("m0: state %v, err %v; want ended with NoAuth", m0.State(), m0.Err())
	}
	if _, err := sim.Run(w, 0, m0.Leave()); err != nil {
		t.Fatalf("Leave after the error: %v", err)
	}
	w.Settle(func() bool { return false })
	if err := w.Server.AdminDelete(w.ServerPath(p.ItemDir("c"))); err != nil {
		t.Fatal(err)
	}
	m1 := join(t, w, p, 1)
	w.Settle(func() bool { return m1.State() == partition.Acquired && len(m1.Held()) == 3 })
	party := w.Children("/e/party")
	var locks []string
	for _, it := range []string{"a", "b"} {
		for _, n := range w.Children(p.ItemDir(it)) {
			st, _ := w.NodeStat(p.ItemDir(it) + "/" + n)
			if st.EphemeralOwner == m0.Session().ID {
				locks = append(locks, it+"/"+n)
			}
		}
	}
	if len(party) != 1 || len(locks) != 0 || len(m1.Held()) != 3 {
		t.Fatalf("m0 ended (%v) and left (Leave succeeded), its session live: party %v, m0's lock nodes still there %v; "+
			"m1, the only live member, is %v holding %v of [a b c] after %v",
			m0.Err(), party, locks, m1.State(), heldItems(m1), w.Clock.Now())
	}
}

// Client.Wait is a blocking call of a Client whose "methods are safe
// from any goroutine"; every blocking call of the module (executor.Await,
// and this Client's Join, Fenced and Leave through internal/blocking)
// fails at once with executor.ErrOnExecutor on an executor's goroutine,
// where waiting would stall the executor that must make the change it
// waits for (CanBlock's doc: "A blocking API built on Submit calls it
// first"). Schedule: a member still Allocating (its Stable not passed);
// a task on the same executor (as the member's Change callback would)
// calls Wait with a context that ends after 300 ms of real time.
// Instead of ErrOnExecutor, Wait blocks the executor goroutine (the
// whole world stalls) until the real deadline passes.
func TestWaitOnTheExecutorGoroutine(t *testing.T) {
	w := newWorld(t, 1, 1)
	cl, err := partition.NewClient(w.Execs[0], "/onex", []string{"a"}, partition.WithStable(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.Run(w, 0, cl.Partitioner().Join("m0", nil))
	if err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return len(w.Children("/onex/party")) == 1 })
	var werr error
	start := time.Now()
	_, err = sim.Run(w, 0, task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, werr = cl.Wait(ctx, m)
		k(task.Unit{}, nil)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(werr, executor.ErrOnExecutor) {
		t.Fatalf("Wait on the executor goroutine = %v after %v of real time (the executor stalled), want executor.ErrOnExecutor at once",
			werr, time.Since(start).Round(10*time.Millisecond))
	}
}

// Client.Leave: "Leave gives up m's items and leaves the party
// (Member.Leave)"; package doc: "a member that leaves gives its items
// up ... and the others take them once the party shows it gone". A
// member handed to the Leave of a Client of another executor must either
// be refused (task.ErrInvalidArgument, as lock's Client refuses a Held
// of another executor: blocking.Owned) or be given up.
//
// Schedule: client 0's first session expires (its executor is on epoch
// 2 now); m0 joins on client 0 and holds a and b. A Client of client 1's
// executor (epoch 1) is handed m0 and Leave succeeds, and m0's Done is
// closed; m1 then joins on client 1. m0's party node and lock nodes stay
// (the deletes compare the member's session epoch with the other
// executor's and skip them as "a later session"), so m1 waits for them
// for as long as client 0's session lives.
func TestLeaveThroughAnotherExecutorsClient(t *testing.T) {
	w := newWorld(t, 1, 2)
	w.Server.Expire(w.Conns[0])
	w.Settle(func() bool { s, _ := w.Execs[0].Current(); return s.Epoch == 2 })
	ca, err := partition.NewClient(w.Execs[0], "/x", []string{"a", "b"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := partition.NewClient(w.Execs[1], "/x", []string{"a", "b"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	m0, err := sim.Run(w, 0, ca.Partitioner().Join("m0", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 2 }) {
		t.Fatalf("m0: %v holding %v", m0.State(), heldItems(m0))
	}
	var lerr error
	left := false
	w.Go(1, func(a *sim.Actor) { lerr = cb.Leave(a.Context(), m0); left = true })
	w.Settle(func() bool { return left })
	if !errors.Is(lerr, task.ErrInvalidArgument) {
		t.Errorf("Leave through another executor's Client = %v, want ErrInvalidArgument (Wait and Fenced refuse it too)", lerr)
	}
	if m0.Err() != nil || len(m0.Held()) != 2 {
		t.Fatalf("after the refused Leave m0 ended (%v) or holds %v", m0.Err(), heldItems(m0))
	}
	if _, err := sim.Run(w, 0, m0.Leave()); err != nil {
		t.Fatal(err)
	}
	m1, err := sim.Run(w, 1, cb.Partitioner().Join("m1", nil))
	if err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return m1.State() == partition.Acquired && len(m1.Held()) == 2 })
	if len(m1.Held()) != 2 {
		t.Fatalf("Leave of m0 through another executor's Client returned %v (m0 err %v); then m1, alone, holds %v after %v; party %v, lock nodes a %v b %v",
			lerr, m0.Err(), heldItems(m1), w.Clock.Now(), w.Children("/x/party"), w.Children(ca.Partitioner().ItemDir("a")), w.Children(ca.Partitioner().ItemDir("b")))
	}
}

// Client: "When ctx ends first, a call returns task.ErrCanceled or
// task.ErrDeadlineExceeded"; as executor.Await and this Client's Join and
// Fenced do, a call made with a ctx that has already ended fails with
// its error. Schedule: m0 is Acquired; Wait is called with a ctx
// canceled before the call. It returns m0's holds and no error, so a
// caller whose ctx has ended goes on to work on the items.
func TestWaitWithAnEndedCtx(t *testing.T) {
	w := newWorld(t, 1, 1)
	cl, err := partition.NewClient(w.Execs[0], "/ended", []string{"a"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	m0, err := sim.Run(w, 0, cl.Partitioner().Join("m0", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return m0.State() == partition.Acquired }) {
		t.Fatalf("m0 %v", m0.State())
	}
	var held []partition.Hold
	var werr, ferr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		ctx, cancel := a.WithCancel(a.Context())
		cancel()
		held, werr = cl.Wait(ctx, m0)
		_, ferr = cl.Fenced(ctx, m0, "a")
		done = true
	})
	w.Settle(func() bool { return done })
	if !errors.Is(werr, context.Canceled) {
		t.Fatalf("Wait with a ctx canceled before the call = %v, %v; want task.ErrCanceled (Fenced with the same ctx: %v)", heldItems2(held), werr, ferr)
	}
}

func heldItems2(hs []partition.Hold) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Item)
	}
	return out
}

// Member.Leave: "it gives up every item (deleting its lock nodes, so the
// next contenders hold at once) and leaves the party (deleting its
// node) ... Leave is idempotent"; Client.Leave: "if ctx has ended, or
// ends first, Leave returns its error and the leave goes on in the
// background". Schedule: m0 holds a, WithDrain waits for /gate. Leave
// with an ended ctx returns canceled (the leave, draining, goes on);
// the caller calls Leave again with a live ctx, to wait for the leave to
// be done. It returns nil at once, while the drain still runs and m0's
// lock node and party node are still on the server.
func TestSecondLeaveWaitsForTheFirst(t *testing.T) {
	w := newWorld(t, 1, 1)
	cl, err := partition.NewClient(w.Execs[0], "/twice", []string{"a"}, partition.WithStable(stable), partition.WithDrain(gateDrain))
	if err != nil {
		t.Fatal(err)
	}
	m0, err := sim.Run(w, 0, cl.Partitioner().Join("m0", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return m0.State() == partition.Acquired }) {
		t.Fatalf("m0 %v", m0.State())
	}
	var first, second error
	done := false
	var locks, party []string
	w.Go(0, func(a *sim.Actor) {
		ctx, cancel := a.WithCancel(a.Context())
		cancel()
		first = cl.Leave(ctx, m0)
		second = cl.Leave(a.Context(), m0)
		locks, party = w.Children(cl.Partitioner().ItemDir("a")), w.Children("/twice/party")
		done = true
	})
	w.Settle(func() bool { return done })
	if !done {
		if _, err := sim.Run(w, 0, task.Create("/gate", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		w.Settle(func() bool { return done })
	}
	if !errors.Is(first, context.Canceled) {
		t.Fatalf("first Leave = %v", first)
	}
	if second == nil && (len(locks) != 0 || len(party) != 0) {
		t.Fatalf("second Leave returned nil with the leave not done (the drain still waiting): lock nodes %v, party %v", locks, party)
	}
}

// Member.Fenced: "ErrNotHeld if it does not hold it". A nil *Member
// holds nothing; the package answers a nil handle with a typed error
// elsewhere (Member.Leave, Partitioner.Join, Client.Fenced: "partition:
// nil Member: invalid argument"). Schedule: run (*Member)(nil).Fenced
// on an executor. It panics (nil dereference in Member.Hold) on the
// executor goroutine instead of failing with ErrNotHeld or
// task.ErrInvalidArgument.
func TestNilMemberFenced(t *testing.T) {
	w := newWorld(t, 1, 1)
	var m *partition.Member
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("(*Member)(nil).Fenced panicked on the executor goroutine: %v", r)
			}
		}()
		_, err = sim.Run(w, 0, m.Fenced("a"))
	}()
	if !errors.Is(err, partition.ErrNotHeld) && !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("(*Member)(nil).Fenced = %v, want ErrNotHeld or ErrInvalidArgument", err)
	}
}

// Client.FencedHold fences a write by the hold it is given, not by the
// member's hold of the item when it runs: once that hold has ended, a
// write made for it fails with ErrLost even though the member holds the
// item again, under a later hold, where Fenced (the member's hold of the
// item now) applies it. The blocking scenario caught the difference once
// goroutines could run late (ActorLag): a goroutine that got a hold from
// Wait wrote, with Fenced, an entry of that hold's token under the
// member's next hold of the item.
func TestFencedHoldRefusesAWriteForAnEndedHold(t *testing.T) {
	w := newWorld(t, 1, 1)
	cl, err := partition.NewClient(w.Execs[0], "/fh", []string{"a"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	m0, err := sim.Run(w, 0, cl.Partitioner().Join("m0", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return m0.State() == partition.Acquired }) {
		t.Fatalf("m0 %v", m0.State())
	}
	first, ok := m0.Hold("a")
	if !ok {
		t.Fatal("m0 holds no a")
	}
	// An operator writes the lock node: the hold is lost, and the member
	// takes the item again under a new one.
	if err := w.Server.AdminSetData(w.ServerPath(first.Path), []byte("operator")); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { h, ok := m0.Hold("a"); return ok && h.Token != first.Token }) {
		t.Fatal("m0 never held a again")
	}
	var holdErr, itemErr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		_, holdErr = cl.FencedHold(a.Context(), m0, first, task.CreateOp("/fh-by-first", nil, task.Persistent))
		_, itemErr = cl.Fenced(a.Context(), m0, "a", task.CreateOp("/fh-by-item", nil, task.Persistent))
		done = true
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("the writes never returned")
	}
	if !errors.Is(holdErr, partition.ErrLost) {
		t.Fatalf("FencedHold with the first hold, ended = %v; want ErrLost", holdErr)
	}
	if _, ok := w.NodeStat("/fh-by-first"); ok {
		t.Fatal("the write for the ended hold was applied")
	}
	if itemErr != nil {
		t.Fatalf("Fenced of the item, held again = %v", itemErr)
	}
}

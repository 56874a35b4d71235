package combinators_test

// Promises of the package's docs tried by an adversarial review. Each of
// these fails on the code before its fix: TestOnErrorPassesDeadlineOpErrorThrough,
// TestBackoffMaxIntCapIsNotNegative, TestMapChainFlatStack,
// TestRetryOfTimeoutWaitsForReconnect, TestRetryKeepsDeadlineOpError;
// TestRetryDefaultDoesNotSettleLostWrite checks Policy.On's corrected doc.
// TestLoopAllocsPerIteration and TestNoTimersLeftAfterCombinators held,
// and check what no other test does (allocations of Loop across its yield,
// timers left on the clock).

import (
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

func stackDepth() int {
	pcs := make([]uintptr, 1<<17)
	return runtime.Callers(0, pcs)
}

// Deadline's doc: "Past it, Deadline fails at once with
// task.ErrDeadlineExceeded (an *task.OpError wrapping it names the request
// that was waiting)", and OnError's: "Other errors pass through."
//
// Schedule: Timeout(OnError(get /app/leader, h, ErrNoNode), 1s); the get
// waits; the clock passes the deadline. The get's wait is abandoned with
// "zk get /app/leader: deadline exceeded" (an *OpError), which OnError does
// not handle, so it should pass through. Instead OnError re-raises it by
// running task.Fail(err) in the scope, which has ended: Run replaces it
// with the scope's bare error, and the name of the request is lost.
func TestOnErrorPassesDeadlineOpErrorThrough(t *testing.T) {
	r := rig.New(t)
	bare := rig.Submit(r, c.Timeout(task.Get("/app/leader"), time.Second))
	wrapped := rig.Submit(r, c.Timeout(c.OnError(task.Get("/app/leader"), func(error) task.Task[task.Data] {
		return task.Value(task.Data{})
	}, task.ErrNoNode), time.Second))
	r.Idle()
	r.Advance(time.Second)
	bare.Want(t, 1, task.ErrDeadlineExceeded)
	wrapped.Want(t, 1, task.ErrDeadlineExceeded)
	var oe *task.OpError
	if !errors.As(bare.Err, &oe) || oe.Path != "/app/leader" {
		t.Fatalf("control: Timeout(get) = %v, want an *OpError naming /app/leader", bare.Err)
	}
	if !errors.As(wrapped.Err, &oe) || oe.Op != "get" || oe.Path != "/app/leader" {
		t.Fatalf("Timeout(OnError(get, ..., ErrNoNode)) = %q, want the OpError %q to pass through OnError", wrapped.Err, bare.Err)
	}
}

// Backoff's doc: "the wait before retry n (n = 1, 2, ...) is min(Max,
// Initial * Multiplier^(n-1))", and Retry waits "the backoff between
// attempts on the executor's clock".
//
// With Max = math.MaxInt64 (the largest Duration: "cap at the most there
// is"), once Initial*Multiplier^(n-1) passes Max, Delay caps d at
// float64(Max), which is 2^63; the guard "d > math.MaxInt64" compares with
// the same 2^63 and lets it through, and time.Duration(2^63) overflows: on
// amd64 it is math.MinInt64, a negative wait, so Retry retries at once.
func TestBackoffMaxIntCapIsNotNegative(t *testing.T) {
	b := c.Backoff{Initial: time.Hour, Max: math.MaxInt64, Multiplier: 1e10}
	if err := (c.Policy{Backoff: b}).Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if d := b.Delay(2, 0.5); d < time.Hour {
		t.Errorf("Delay(2) = %v, want min(Max, 1h*1e10) = Max (%v)", d, time.Duration(math.MaxInt64))
	}

	// The same policy in a Retry: attempt 3 comes with no wait at all.
	r := rig.New(t)
	var at []time.Duration
	start := r.Clock.Now()
	flaky := task.Func(func(s *task.Scope) (int, error) {
		at = append(at, s.Now().Sub(start))
		return 0, task.ErrNotSent
	})
	o := rig.Submit(r, c.Retry(flaky, c.Policy{Attempts: 3, Backoff: b}))
	r.Idle()
	r.Advance(time.Hour) // attempt 2
	r.Advance(time.Hour)
	if len(at) > 2 {
		t.Fatalf("attempts at %v: the third came right after the second, want it Max after", at)
	}
	o.Want(t, 0, nil)
}

// The task package's doc (task.go): "Combinators start tasks with Run and
// call continuations with Resume, which check the scope and trampoline
// through the executor so that a long chain of synchronous steps does not
// grow the stack" (and DESIGN.md: "a chain of a million synchronous steps
// ... does not grow the stack").
//
// A chain of Maps built in a loop (t = Map(t, f)), run on synchronous
// steps: Map calls its continuation directly (k(f(v), nil)), not through
// Resume, so the completion of the innermost step runs every Map's
// callback nested on one stack: the stack grows with the chain. The same
// chain of Thens (the control) stays flat.
func TestMapChainFlatStack(t *testing.T) {
	const n = 100_000
	r := rig.New(t)
	maxDepth := 0
	probe := func(i int) int {
		if i%1000 == 0 {
			maxDepth = max(maxDepth, stackDepth())
		}
		return i + 1
	}

	then := task.Value(0)
	for range n {
		then = c.Then(then, func(i int) task.Task[int] { return task.Value(probe(i)) })
	}
	o := rig.Submit(r, then)
	r.Idle()
	o.Want(t, 1, nil)
	if o.V != n {
		t.Fatalf("Then chain = %d", o.V)
	}
	thenDepth := maxDepth
	if thenDepth > 2000 {
		t.Fatalf("control: the Then chain's stack reached %d frames", thenDepth)
	}

	maxDepth = 0
	m := task.Value(0)
	for range n {
		m = c.Map(m, probe)
	}
	o = rig.Submit(r, m)
	r.Idle()
	o.Want(t, 1, nil)
	if o.V != n {
		t.Fatalf("Map chain = %d", o.V)
	}
	if maxDepth > 2000 {
		t.Fatalf("a chain of %d synchronous Maps reached %d frames (the same chain of Thens: %d)", n, maxDepth, thenDepth)
	}
}

// Holds; no existing test checks it. Loop's doc: "an endless loop neither
// grows the stack nor allocates per iteration beyond what body allocates",
// also across its yields to the task queue every 64 synchronous
// iterations. (Skipped in invariant builds, whose Run allocates.)
func TestLoopAllocsPerIteration(t *testing.T) {
	if invariantsBuild() {
		t.Skip("invariant checks allocate per Run")
	}
	r := rig.New(t)
	body := task.Task[int](func(_ *task.Scope, k task.Cont[int]) { k(0, nil) })
	run := func(n int) func() {
		return func() {
			left := n
			o := rig.Submit(r, c.Loop(0, func(int) bool { left--; return left >= 0 }, func(int) task.Task[int] { return body }))
			r.Idle()
			if o.Calls != 1 || o.Err != nil {
				t.Fatalf("loop: %d calls, %v", o.Calls, o.Err)
			}
		}
	}
	small := testing.AllocsPerRun(20, run(640))
	big := testing.AllocsPerRun(20, run(64_640))
	if per := (big - small) / 64_000; per > 0.01 {
		t.Fatalf("Loop allocates %.3f per iteration (%v for 640, %v for 64640) with a body that allocates nothing", per, small, big)
	}
}

// invariantsBuild reports a build with the task package's invariant
// checks (race or the invariants tag), whose once() wrapper allocates per
// Run.
func invariantsBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return true
	}
	for _, s := range bi.Settings {
		if (s.Key == "-race" && s.Value == "true") || (s.Key == "-tags" && strings.Contains(s.Value, "zkflow_invariants")) {
			return true
		}
	}
	return false
}

// Holds; checks what no existing test does (TestMemoryFlatFlows counts
// scopes and heap, not timers): once combinators have ended, however they
// ended (Timeout met or missed, All with a sleeping branch canceled by a
// failing one, a Retry's backoff ended by a deadline or by Flow.Cancel,
// nested deadlines, a Loop of Timeout(Sleep) canceled), no timer of theirs
// is left on the executor's clock.
func TestNoTimersLeftAfterCombinators(t *testing.T) {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk})
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: clk, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	ex.RunUntilIdle()
	base := clk.Pending()
	var errs []error
	sub := func(tk task.Task[task.Unit]) *executor.Flow {
		return executor.Submit(ex, tk, func(_ task.Unit, err error) { errs = append(errs, err) })
	}
	fail := task.Fail[task.Unit](errBoom)
	backoff := c.Policy{On: []error{errBoom}, Backoff: c.Backoff{Initial: time.Hour}}
	sub(c.Timeout(task.Done, time.Hour))
	sub(c.Timeout(c.Sleep(time.Hour), time.Minute))
	sub(c.Map(c.All(c.Sleep(time.Hour), fail), func([]task.Unit) task.Unit { return task.Unit{} }))
	sub(c.Timeout(c.Retry(fail, backoff), time.Minute))
	f := sub(c.Retry(fail, backoff))
	sub(c.Deadline(c.Timeout(c.Timeout(task.Done, time.Hour), 2*time.Hour), clk.Now().Add(3*time.Hour)))
	g := sub(c.Loop(task.Unit{}, func(task.Unit) bool { return true }, func(task.Unit) task.Task[task.Unit] {
		return c.Timeout(c.Sleep(time.Second), time.Hour)
	}))
	ex.RunUntilIdle()
	f.Cancel()
	g.Cancel()
	ex.RunUntilIdle()
	clk.Advance(time.Minute)
	ex.RunUntilIdle()
	if len(errs) != 7 {
		t.Fatalf("%d flows ended, want 7: %v", len(errs), errs)
	}
	if n := clk.Pending(); n != base {
		t.Fatalf("%d timers left on the clock after every flow ended, want %d", n, base)
	}
}

// Policy.On's doc: a retry of the default errors settles the outcome of
// reads and of writes that may be applied twice; "a retried create,
// delete or conditional set can fail ... because of its own first
// attempt". (It used to say the default errors are those "whose outcome a
// retry settles", which this schedule disproves.)
//
// Schedule: Retry(Delete("/x", version 0), Policy{}) (the default errors);
// the delete is sent; the connection drops with the delete applied and its
// reply lost (fakezk Server.Drop(c, true)): ErrConnectionLoss, which the
// default policy retries. The retry fails with ErrNoNode, though the
// delete was applied, once, exactly as asked (the node is gone).
func TestRetryDefaultDoesNotSettleLostWrite(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create("/x", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, c.Retry(task.Delete("/x", 0), c.Policy{}))
	w.Execs[0].RunUntilIdle() // the delete is sent, not applied yet
	if _, ok := w.Server.NodeStat("/x"); !ok {
		t.Fatal("the delete was applied before the drop")
	}
	w.Server.Drop(w.Conns[0], true) // applied, reply lost
	if !w.Settle(func() bool { return o.Done }) {
		t.Fatal("the retry never ended")
	}
	if _, ok := w.Server.NodeStat("/x"); ok {
		t.Fatal("the delete was not applied")
	}
	if !errors.Is(o.Err, task.ErrNoNode) {
		t.Fatalf("Retry(delete /x at version 0) = %v, want ErrNoNode from the retry of a delete its first attempt applied, as Policy.On's doc says", o.Err)
	}
}

// The package doc: "Retry after connection loss waits for the reconnect
// (the executor's task queue is paused) instead of spinning", and
// executor/doc.go: "No step of any flow runs while the session is
// suspended".
//
// Schedule: a Retry with a timeout per attempt (Retry(Timeout(get /a, 1s),
// On: connection loss and deadline exceeded), the usual way to bound each
// attempt); the get is sent; the session is suspended and the get fails
// with connection loss (its reply waits in the paused task queue); the
// clock moves on 1s at a time. Each attempt's deadline fires from the
// event queue (as it must), but Deadline's scope delivers its error to the
// Retry's continuation synchronously, inside that event job, and the Retry
// sends the next attempt then and there: one request per second while the
// session is suspended, instead of none until the reconnect.
func TestRetryOfTimeoutWaitsForReconnect(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, c.Retry(c.Timeout(task.Get("/a"), time.Second),
		c.Policy{On: []error{task.ErrConnectionLoss, task.ErrDeadlineExceeded}}))
	r.Idle()
	r.Conn.Suspend()
	r.Conn.Pending()[0].Fail(task.ErrConnectionLoss)
	r.Idle()
	for range 5 {
		r.Advance(time.Second)
	}
	if n := len(r.Conn.Calls()); n != 1 {
		t.Fatalf("%d requests sent while the session was suspended, want the first only (the next after the reconnect)", n)
	}
	o.Want(t, 0, nil)
}

// Retry's doc: "The outcome is that of the last attempt", and Deadline's:
// "Past it, Deadline fails at once with task.ErrDeadlineExceeded (an
// *task.OpError wrapping it names the request that was waiting)".
//
// Schedule: an overall timeout around a Retry with a timeout per attempt,
// Timeout(Retry(Timeout(get /a, 1h), On: deadline exceeded), 1s); the get
// waits; the clock passes 1s. The last attempt fails with "zk get /a:
// deadline exceeded" (an *OpError). Retry matches it against its policy,
// then sees its scope has ended and reports the scope's bare error
// instead of the attempt's: the name of the request is lost.
func TestRetryKeepsDeadlineOpError(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, c.Timeout(c.Retry(c.Timeout(task.Get("/a"), time.Hour),
		c.Policy{On: []error{task.ErrDeadlineExceeded}}), time.Second))
	r.Idle()
	r.Advance(time.Second)
	o.Want(t, 1, task.ErrDeadlineExceeded)
	if n := len(r.Conn.Calls()); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	var oe *task.OpError
	if !errors.As(o.Err, &oe) || oe.Op != "get" || oe.Path != "/a" {
		t.Fatalf("Timeout(Retry(Timeout(get /a))) = %q, want the last attempt's \"zk get /a: deadline exceeded\"", o.Err)
	}
}

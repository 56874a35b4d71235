package combinators_test

import (
	"context"
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

var errBoom = errors.New("boom")

func TestThenMapSeq(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, c.Map(c.Then(task.Value(20), func(v int) task.Task[int] {
		return c.Seq(task.Done, task.Value(v+1))
	}), func(v int) string { return string(rune('A' + v)) }))
	r.Idle()
	o.Want(t, 1, nil)
	if o.V != "V" {
		t.Fatalf("got %q", o.V)
	}
	ran := false
	o2 := rig.Submit(r, c.Then(task.Fail[int](errBoom), func(int) task.Task[int] { ran = true; return task.Value(1) }))
	r.Idle()
	o2.Want(t, 1, errBoom)
	if ran {
		t.Fatal("Then ran its continuation after an error")
	}
	o3 := rig.Submit(r, c.Then(task.Value(1), func(int) task.Task[int] { return nil }))
	r.Idle()
	o3.Want(t, 1, task.ErrNilTask)
}

func TestOnError(t *testing.T) {
	r := rig.New(t)
	handled := rig.Submit(r, c.OnError(task.Get("/missing"), func(err error) task.Task[task.Data] {
		return task.Value(task.Data{Data: []byte("default")})
	}, task.ErrNoNode))
	passed := rig.Submit(r, c.OnError(task.Get("/other"), func(error) task.Task[task.Data] {
		t.Error("handler ran for an error it does not name")
		return nil
	}, task.ErrNoNode))
	r.Idle()
	calls := r.Conn.Pending()
	calls[0].Fail(task.ErrNoNode)
	calls[1].Fail(task.ErrBadVersion)
	r.Idle()
	handled.Want(t, 1, nil)
	if string(handled.V.Data) != "default" {
		t.Fatalf("handled = %q", handled.V.Data)
	}
	passed.Want(t, 1, task.ErrBadVersion)
	// The handler sees the error, wrapped with operation and path.
	var oe *task.OpError
	if !errors.As(passed.Err, &oe) || oe.Op != "get" || oe.Path != "/other" {
		t.Fatalf("error %v does not name op and path", passed.Err)
	}
}

func TestNoOpPoliciesReturnInput(t *testing.T) {
	in := task.Value(1)
	same := funcEq
	if !same(c.Retry(in, c.Policy{Attempts: 1}), in) {
		t.Error("Retry with one attempt is not its input")
	}
	if !same(c.OnError(in, func(error) task.Task[int] { return in }), in) {
		t.Error("OnError with no errors is not its input")
	}
	if !same(c.Deadline(in, time.Time{}), in) {
		t.Error("Deadline with zero time is not its input")
	}
	if !same(c.Timeout(in, 0), in) {
		t.Error("Timeout with zero duration is not its input")
	}
}

func TestRetryPolicy(t *testing.T) {
	r := rig.New(t)
	attempts := 0
	flaky := task.Func(func(*task.Scope) (int, error) {
		attempts++
		return 0, task.ErrConnectionLoss
	})
	o := rig.Submit(r, c.Retry(flaky, c.Policy{Attempts: 3}))
	r.Idle()
	o.Want(t, 1, task.ErrConnectionLoss)
	if attempts != 3 {
		t.Fatalf("attempts = %d, want 3", attempts)
	}
	// Errors not named are not retried.
	attempts = 0
	bad := task.Func(func(*task.Scope) (int, error) { attempts++; return 0, task.ErrBadVersion })
	o = rig.Submit(r, c.Retry(bad, c.Policy{Attempts: 5}))
	r.Idle()
	o.Want(t, 1, task.ErrBadVersion)
	if attempts != 1 {
		t.Fatalf("attempts = %d, want 1", attempts)
	}
	// Named errors are.
	attempts = 0
	o = rig.Submit(r, c.Retry(bad, c.Policy{Attempts: 4, On: []error{task.ErrBadVersion}}))
	r.Idle()
	o.Want(t, 1, task.ErrBadVersion)
	if attempts != 4 {
		t.Fatalf("attempts = %d, want 4", attempts)
	}
	// An invalid policy is a typed error, not a panic.
	o = rig.Submit(r, c.Retry(bad, c.Policy{Attempts: -1}))
	r.Idle()
	o.Want(t, 1, task.ErrInvalidArgument)
}

func TestRetryBackoffOnClock(t *testing.T) {
	r := rig.New(t)
	attempts := 0
	flaky := task.Func(func(*task.Scope) (int, error) {
		attempts++
		if attempts == 4 {
			return attempts, nil
		}
		return 0, task.ErrNotSent
	})
	p := c.Policy{Backoff: c.Backoff{Initial: 100 * time.Millisecond, Multiplier: 2}}
	o := rig.Submit(r, c.Retry(flaky, p))
	r.Idle()
	// Waits of 100ms, 200ms, 400ms between the attempts.
	for i, step := range []time.Duration{99 * time.Millisecond, time.Millisecond, 199 * time.Millisecond, time.Millisecond, 399 * time.Millisecond, time.Millisecond} {
		before := attempts
		r.Advance(step)
		wantMore := i%2 == 1
		if (attempts > before) != wantMore {
			t.Fatalf("step %d (%v): attempts %d -> %d", i, step, before, attempts)
		}
	}
	o.Want(t, 1, nil)
	if attempts != 4 {
		t.Fatalf("attempts = %d", attempts)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := c.Backoff{Initial: time.Second, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.5}
	cases := []struct {
		n    int
		u    float64
		want time.Duration
	}{
		{1, 0.5, time.Second},
		{2, 0.5, 2 * time.Second},
		{3, 0.5, 4 * time.Second},
		{4, 0.5, 5 * time.Second},
		{1, 0, 500 * time.Millisecond},
		{1, 1, 1500 * time.Millisecond},
		{0, 0.5, 0},
		{1000, 0.5, 5 * time.Second},
	}
	for _, tc := range cases {
		if got := b.Delay(tc.n, tc.u); got != tc.want {
			t.Errorf("Delay(%d, %v) = %v, want %v", tc.n, tc.u, got, tc.want)
		}
	}
}

func TestRetryStopsAtDeadline(t *testing.T) {
	r := rig.New(t)
	attempts := 0
	flaky := task.Func(func(*task.Scope) (int, error) { attempts++; return 0, task.ErrNotSent })
	o := rig.Submit(r, c.Timeout(c.Retry(flaky, c.Policy{Backoff: c.Backoff{Initial: time.Second}}), 3500*time.Millisecond))
	r.Idle()
	for range 10 {
		r.Advance(time.Second)
	}
	o.Want(t, 1, task.ErrDeadlineExceeded)
	if attempts != 4 {
		t.Fatalf("attempts = %d, want 4 (at 0s, 1s, 2s, 3s)", attempts)
	}
}

func TestDeadlinesNest(t *testing.T) {
	r := rig.New(t)
	var inner time.Time
	probe := task.Func(func(s *task.Scope) (int, error) {
		inner, _ = s.Deadline()
		return 0, nil
	})
	start := r.Clock.Now()
	rig.Submit(r, c.Timeout(c.Timeout(probe, time.Hour), time.Second))
	r.Idle()
	if want := start.Add(time.Second); !inner.Equal(want) {
		t.Fatalf("inner deadline %v, want the outer %v", inner, want)
	}
	rig.Submit(r, c.Timeout(c.Timeout(probe, time.Second), time.Hour))
	r.Idle()
	if want := start.Add(time.Second); !inner.Equal(want) {
		t.Fatalf("inner deadline %v, want %v", inner, want)
	}
	// An already-passed deadline fails before the task starts.
	ran := false
	o := rig.Submit(r, c.Deadline(task.Func(func(*task.Scope) (int, error) { ran = true; return 1, nil }), start.Add(-time.Second)))
	r.Idle()
	o.Want(t, 1, task.ErrDeadlineExceeded)
	if ran {
		t.Fatal("task ran past its deadline")
	}
}

func TestSleep(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, c.Sleep(time.Minute))
	r.Idle()
	r.Advance(59 * time.Second)
	o.Want(t, 0, nil)
	r.Advance(time.Second)
	o.Want(t, 1, nil)
	// A sleep that ends while suspended resumes on reconnect.
	o = rig.Submit(r, c.Sleep(time.Second))
	r.Idle()
	r.Conn.Suspend()
	r.Advance(2 * time.Second)
	o.Want(t, 0, nil)
	r.Conn.Connect(1)
	r.Idle()
	o.Want(t, 1, nil)
}

func TestForkRunsIndependently(t *testing.T) {
	r := rig.New(t)
	var order []string
	forked := &rig.Outcome[task.Data]{}
	o := rig.Submit(r, c.Then(c.Fork(task.Get("/f"), forked.K), func(task.Unit) task.Task[int] {
		order = append(order, "parent continues")
		return task.Value(1)
	}))
	r.Idle()
	o.Want(t, 1, nil) // the parent finished while the fork still waits
	forked.Want(t, 0, nil)
	r.Conn.Pending()[0].Reply(task.Response{Data: []byte("f")})
	r.Idle()
	forked.Want(t, 1, nil)
	// A fork outlives its parent's deadline; its unhandled error is reported.
	o = rig.Submit(r, c.Timeout(c.Then(c.Fork(task.Get("/g"), nil), func(task.Unit) task.Task[int] {
		return c.Map(task.Get("/h"), func(task.Data) int { return 0 })
	}), time.Second))
	r.Idle()
	r.Advance(time.Second)
	o.Want(t, 1, task.ErrDeadlineExceeded)
	p := r.Conn.Pending()
	if len(p) != 2 {
		t.Fatalf("%d pending", len(p))
	}
	for _, call := range p {
		if call.Req.NodePath() == "/g" {
			call.Fail(task.ErrNoNode)
		}
	}
	r.Idle()
	if len(r.Errs) != 1 || !errors.Is(r.Errs[0], task.ErrNoNode) {
		t.Fatalf("reported errors %v", r.Errs)
	}
}

func TestAll(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, c.All(
		c.Map(task.Get("/a"), func(d task.Data) string { return string(d.Data) }),
		c.Map(task.Get("/b"), func(d task.Data) string { return string(d.Data) }),
		task.Value("c"),
	))
	r.Idle()
	p := r.Conn.Pending()
	if len(p) != 2 {
		t.Fatalf("%d requests in flight, want 2 (both started)", len(p))
	}
	p[1].Reply(task.Response{Data: []byte("b")}) // out of order
	r.Idle()
	o.Want(t, 0, nil)
	p[0].Reply(task.Response{Data: []byte("a")})
	r.Idle()
	o.Want(t, 1, nil)
	if got := o.V; len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("All = %v", got)
	}

	// The first error ends All at once and cancels the rest.
	next := 0
	o2 := rig.Submit(r, c.All(
		c.Then(task.Get("/x"), func(task.Data) task.Task[int] { next++; return task.Value(1) }),
		c.Map(task.Get("/y"), func(task.Data) int { return 2 }),
	))
	r.Idle()
	p = r.Conn.Pending()
	p[1].Fail(task.ErrNoNode)
	r.Idle()
	o2.Want(t, 1, task.ErrNoNode)
	p[0].Reply(task.Response{})
	r.Idle()
	if next != 0 {
		t.Fatal("a canceled branch went on")
	}
	o2.Want(t, 1, task.ErrNoNode)

	o3 := rig.Submit(r, c.All[int]())
	r.Idle()
	o3.Want(t, 1, nil)
}

func TestLoop(t *testing.T) {
	r := rig.New(t)
	// An asynchronous body: the loop re-enters from the continuation.
	o := rig.Submit(r, c.Loop(0, func(i int) bool { return i < 3 }, func(i int) task.Task[int] {
		return c.Map(task.Get("/n"), func(task.Data) int { return i + 1 })
	}))
	for range 3 {
		r.Idle()
		r.Conn.Pending()[0].Reply(task.Response{})
	}
	r.Idle()
	o.Want(t, 1, nil)
	if o.V != 3 {
		t.Fatalf("loop = %d", o.V)
	}
	o = rig.Submit(r, c.Loop(0, func(int) bool { return true }, func(i int) task.Task[int] {
		if i == 5 {
			return task.Fail[int](errBoom)
		}
		return task.Value(i + 1)
	}))
	r.Idle()
	o.Want(t, 1, errBoom)
}

// A policy that retries session expiry stops once the flow's own scope has
// ended with it: further attempts would fail at once, without time passing.
func TestRetryStopsWhenScopeEnds(t *testing.T) {
	r := rig.New(t)
	attempts := 0
	get := task.Task[task.Data](func(s *task.Scope, k task.Cont[task.Data]) {
		attempts++
		task.Get("/a")(s, k)
	})
	o := rig.Submit(r, c.Retry(get, c.Policy{On: []error{task.ErrSessionExpired, task.ErrConnectionLoss}}))
	r.Idle()
	// The connection fails the request with session expiry before it
	// reports the expiry itself, as clients do: the retry's next attempt
	// runs before the flow's scope has ended. (Without the stop, the
	// attempts after the scope ends fail at once and Step never returns.)
	r.Conn.Pending()[0].Fail(task.ErrSessionExpired)
	r.Conn.Expire()
	for range 100 {
		if r.Ex.Step() == false {
			break
		}
	}
	o.Want(t, 1, task.ErrSessionExpired)
	if attempts > 3 {
		t.Fatalf("%d attempts after the scope ended", attempts)
	}
}

// Timeout's error names the request that was waiting for its reply, and
// still matches task.ErrDeadlineExceeded and context.DeadlineExceeded.
func TestTimeoutNamesTheRequestInFlight(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, c.Timeout(c.Then(task.Get("/a"), func(task.Data) task.Task[bool] {
		return c.Map(task.Exists("/app/leader"), func(st *task.Stat) bool { return st != nil })
	}), time.Second))
	r.Idle()
	r.Conn.Pending()[0].Reply(task.Response{Data: []byte("x")}) // the get; the exists waits
	r.Idle()
	r.Advance(time.Second)
	o.Want(t, 1, task.ErrDeadlineExceeded)
	if !errors.Is(o.Err, context.DeadlineExceeded) || o.Err.Error() != "zk exists /app/leader: deadline exceeded" {
		t.Fatalf("err = %v, want the exists of /app/leader named, matching context.DeadlineExceeded", o.Err)
	}
}

// A Policy with no On retries exactly connection loss and not sent,
// however many Retries share that default; building one allocates the
// task alone.
func TestRetryDefaultErrors(t *testing.T) {
	r := rig.New(t)
	for _, tc := range []struct {
		err      error
		attempts int
	}{
		{task.ErrNotSent, 3},
		{task.ErrConnectionLoss, 3},
		{task.ErrSessionExpired, 1},
		{task.ErrNoNode, 1},
	} {
		attempts := 0
		flaky := task.Func(func(*task.Scope) (int, error) { attempts++; return 0, tc.err })
		o := rig.Submit(r, c.Retry(flaky, c.Policy{Attempts: 3}))
		r.Idle()
		o.Want(t, 1, tc.err)
		if attempts != tc.attempts {
			t.Errorf("%v: %d attempts, want %d", tc.err, attempts, tc.attempts)
		}
	}
	flaky := task.Func(func(*task.Scope) (int, error) { return 0, nil })
	var sink task.Task[int]
	if n := testing.AllocsPerRun(100, func() { sink = c.Retry(flaky, c.Policy{Attempts: 3}) }); n > 1 {
		t.Errorf("building a Retry: %v allocations, want 1", n)
	}
	_ = sink
}

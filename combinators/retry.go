package combinators

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Policy says when and how Retry repeats a task.
type Policy struct {
	// Attempts is the most attempts in all, the first included; 0 means
	// no limit (until success, another error, or the scope's deadline).
	Attempts int
	// On lists the errors to retry (matched with errors.Is). Empty means
	// task.ErrConnectionLoss and task.ErrNotSent. A retry settles their
	// outcome for reads and for writes that may be applied twice; a write
	// lost with ErrConnectionLoss may have been applied, so a retried
	// create, delete or conditional set can fail (NodeExists, NoNode,
	// BadVersion) because of its own first attempt: settle such writes by
	// reading (task/SCOPES_AND_ACLS.md), as the recipes do.
	On []error
	// Backoff is the wait before each retry; the zero value retries at once.
	Backoff Backoff
}

// Backoff is an exponential backoff with jitter: the wait before retry n
// (n = 1, 2, ...) is min(Max, Initial * Multiplier^(n-1)), scaled by a
// factor drawn uniformly from [1-Jitter, 1+Jitter] with the executor's
// seeded source, so a simulation replays the same waits.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration // 0: no cap
	Multiplier float64       // < 1 is taken as 1 (constant backoff)
	Jitter     float64       // in [0, 1]
}

// Delay returns the wait before retry n, with the jitter factor drawn from u
// in [0, 1).
func (b Backoff) Delay(n int, u float64) time.Duration {
	if b.Initial <= 0 || n < 1 {
		return 0
	}
	m := max(b.Multiplier, 1)
	if math.IsNaN(m) {
		m = 1 // Validate refuses it; Delay alone takes it as < 1
	}
	d := float64(b.Initial) * math.Pow(m, float64(n-1))
	if b.Max > 0 && d > float64(b.Max) {
		d = float64(b.Max)
	}
	if j := min(max(b.Jitter, 0), 1); j > 0 {
		d *= 1 - j + 2*j*u
	}
	if !(d > 0) {
		// A factor of 0 (Jitter 1, u 0) times a wait grown past
		// float64's range (+Inf, no Max) is NaN: no wait, as the factor
		// 0 gives for every finite one.
		return 0
	}
	if d >= math.MaxInt64 { // float64(MaxInt64) is 2^63, one past it
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// Validate reports a policy that cannot work.
func (p Policy) Validate() error {
	switch {
	case p.Attempts < 0:
		return fmt.Errorf("%w: retry attempts %d < 0", task.ErrInvalidArgument, p.Attempts)
	case p.Backoff.Initial < 0 || p.Backoff.Max < 0:
		return fmt.Errorf("%w: negative backoff", task.ErrInvalidArgument)
	case p.Backoff.Jitter < 0 || p.Backoff.Jitter > 1 || math.IsNaN(p.Backoff.Jitter):
		return fmt.Errorf("%w: jitter %v not in [0, 1]", task.ErrInvalidArgument, p.Backoff.Jitter)
	case math.IsNaN(p.Backoff.Multiplier):
		return fmt.Errorf("%w: backoff multiplier NaN", task.ErrInvalidArgument)
	}
	return nil
}

// Retry runs t and runs it again while it fails with one of the policy's
// errors, up to the policy's attempts, waiting the backoff between
// attempts on the executor's clock. The outcome is that of the last attempt.
//
// A retry after connection loss waits for the reconnect rather than
// spinning: an attempt that failed asynchronously is retried from the
// executor's task queue, which is paused while the session is suspended
// (also when the failure came from a Deadline inside the attempt, which
// fires even then). A deadline or cancel stops the retries at the next attempt or
// during the wait. Retries that fail synchronously loop without growing the
// stack, and every 64 of them in a row the next goes through the executor's
// task queue: a policy that retries at once, without limit, an error that
// comes at once (a Deadline already past, retried on ErrDeadlineExceeded)
// loops forever, but lets other flows run and Close stop it. An invalid
// policy fails the task with the error of Validate; a policy of one
// attempt returns t itself. Each retry is reported to the
// executor's task.Observer (OnRetry), if it has one.
func Retry[T any](t task.Task[T], p Policy) task.Task[T] {
	if err := p.Validate(); err != nil {
		return task.Fail[T](err)
	}
	if p.Attempts == 1 {
		return t
	}
	on := p.On
	if len(on) == 0 {
		on = defaultOn
	}
	attempts, backoff := p.Attempts, p.Backoff // what the task keeps of p
	return func(s *task.Scope, k task.Cont[T]) {
		r := &retrier[T]{s: s, k: k, t: t, attempts: attempts, backoff: backoff, on: on}
		r.cb = r.done
		r.drive()
	}
}

// defaultOn is the errors a Policy with no On retries: one slice, read
// only, rather than one per Retry built.
var defaultOn = []error{task.ErrConnectionLoss, task.ErrNotSent}

type retrier[T any] struct {
	spin
	s *task.Scope
	k task.Cont[T]
	t task.Task[T]
	// The policy's (on replaces its On): not the whole Policy, so that
	// a retrier is smaller.
	attempts int
	backoff  Backoff
	on       []error
	cb       task.Cont[T]
	attempt  int
}

func (r *retrier[T]) done(v T, err error) {
	if err == nil || !matchAny(err, r.on) || (r.attempts > 0 && r.attempt >= r.attempts) {
		task.Resume(r.s, r.k, v, err)
		return
	}
	if serr := r.s.Err(); serr != nil {
		// The scope has ended (canceled, past its deadline, or its session
		// expired): every further attempt would fail at once, and a policy
		// that retries that very error would spin without time passing.
		// The last attempt's error stands if the scope's end is its cause
		// (it may name the request that was waiting), else the scope's.
		if !errors.Is(err, serr) {
			err = serr
		}
		var zero T
		task.Resume(r.s, r.k, zero, err)
		return
	}
	wait := r.backoff.Delay(r.attempt, float64(r.s.Rand()>>11)/(1<<53))
	if o := task.ObserverOf(r.s); o != nil {
		o.OnRetry(task.RetryInfo{Attempt: r.attempt + 1, Err: err, Wait: wait, Flow: task.FlowOf(r.s)})
	}
	if wait > 0 {
		task.Run(r.s, Sleep(wait), func(_ task.Unit, err error) {
			if err != nil {
				var zero T
				task.Resume(r.s, r.k, zero, err)
				return
			}
			r.drive()
		})
		return
	}
	if r.inCall {
		r.next(nil) // synchronous: run's loop goes on
		return
	}
	// An attempt that failed later: its failure may have come from the
	// event queue (a Deadline inside the attempt fires while the session is
	// suspended), so the next attempt starts from the task queue, which is
	// paused while suspended.
	if r.resume == nil {
		r.resume = r.drive
	}
	r.s.Schedule(r.resume)
}

func (r *retrier[T]) drive() {
	if r.run(r.iterate) {
		if r.resume == nil {
			r.resume = r.drive
		}
		r.s.Schedule(r.resume)
	}
}

func (r *retrier[T]) iterate() bool {
	r.attempt++
	task.Run(r.s, r.t, r.cb)
	return true
}

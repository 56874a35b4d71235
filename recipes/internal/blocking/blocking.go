// Package blocking is the machinery the recipes' blocking faces share:
// waiting for a flow that takes something (a lock, a lease, leadership, a
// place at a barrier) until a context ends, without keeping what it took
// when the caller has stopped waiting (Take); giving it back whatever the
// context, even one that has ended (Give); and running a handle's task on
// the executor that took the handle (Do, Owned).
package blocking

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/task"
)

// BugKeepLateOutcome: Take keeps what its flow took when the outcome
// came after the caller's context ended (the flow was ending as the
// caller looked, so its cancel came too late): undo is not called, and a
// lock, a lease or a membership nobody holds stays until the session
// ends. A canary (internal/canary), hunted by the blocking scenarios.
const BugKeepLateOutcome canary.Name = "blocking/keep-late-outcome"

// Take runs t on ex and waits until it ends or ctx does. When t ends
// first, Take returns its outcome, after calling won with the value if t
// succeeded (on the calling goroutine, before Take returns). When ctx
// ends first, the flow is canceled and waited for (a canceled flow ends
// promptly); if it had succeeded all the same, undo is called with the
// value so that nothing taken is kept, and Take returns CtxErr(ctx).
// A ctx that has ended already submits nothing, and a nil ctx nothing
// either (executor.ErrNilContext); on an executor's goroutine, where
// waiting would wait forever, Take fails at once with
// executor.ErrOnExecutor.
func Take[H any](ctx context.Context, what string, ex *executor.Executor, t task.Task[H], won, undo func(H)) (H, error) {
	var zero H
	if err := executor.CanBlock(); err != nil {
		return zero, err
	}
	if ctx == nil {
		return zero, nilCtx(what)
	}
	if ctx.Err() != nil {
		return zero, CtxErr(ctx, what)
	}
	type result struct {
		v   H
		err error
	}
	ch := make(chan result, 1)
	f := executor.Submit(ex, t, func(v H, err error) { ch <- result{v, err} })
	pk := park.From(ctx) // a simulation's goroutine, or nil: the waits' closures are made only then
	if pk != nil {
		pk.Wait(func() bool { return len(ch) > 0 || ctx.Err() != nil })
	}
	var r result
	got := false
	select { // an outcome already in wins over a ctx that has ended too
	case r = <-ch:
		got = true
	default:
		select {
		case r = <-ch:
			got = true
		case <-ctx.Done():
		}
	}
	if got {
		if r.err == nil && won != nil {
			won(r.v)
		}
		return r.v, r.err
	}
	f.Cancel()
	if pk != nil {
		pk.Wait(func() bool { return len(ch) > 0 })
	}
	r = <-ch // the flow ends promptly once canceled
	if r.err == nil && undo != nil && !canary.On(BugKeepLateOutcome) {
		undo(r.v)
	}
	return zero, CtxErr(ctx, what)
}

// CtxErr is the error a blocking call returns when ctx ended first:
// task.ErrDeadlineExceeded or task.ErrCanceled (which match
// context.DeadlineExceeded and context.Canceled under errors.Is), wrapped
// in what was waiting ("lock /locks/a: acquire: deadline exceeded"). For
// a nil ctx it is executor.ErrNilContext, wrapped the same way: a call
// that checks `ctx == nil || ctx.Err() != nil` before it waits refuses a
// nil ctx with it.
func CtxErr(ctx context.Context, what string) error {
	if ctx == nil {
		return nilCtx(what)
	}
	err := task.ErrCanceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = task.ErrDeadlineExceeded
	}
	if what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// nilCtx is the error of a blocking call given a nil ctx:
// executor.ErrNilContext, wrapped in what was called.
func nilCtx(what string) error {
	if what == "" {
		return executor.ErrNilContext
	}
	return fmt.Errorf("%s: %w", what, executor.ErrNilContext)
}

// Named wraps an error that ends a blocking call in what was waiting, if
// it is a context's end (task.ErrDeadlineExceeded or task.ErrCanceled)
// that does not say so already; other errors name their operation
// themselves.
func Named(what string, err error) error {
	if err == nil || what == "" || !(errors.Is(err, task.ErrDeadlineExceeded) || errors.Is(err, task.ErrCanceled)) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Do runs the task mk makes on ex and waits for it until ctx ends
// (executor.Await), once owner, the executor the handle was taken on, is
// ex; otherwise it fails with notOurs at once. A handle taken through the
// task face has no owner and is refused.
func Do[T any](ctx context.Context, what string, ex, owner *executor.Executor, notOurs error, mk func() task.Task[T]) (T, error) {
	if owner == nil || owner != ex {
		var zero T
		return zero, notOurs
	}
	v, err := executor.Await(ctx, ex, mk())
	return v, Named(what, err)
}

// Give starts t on ex whatever ctx, and waits for its outcome until ctx
// ends. It is the shape of every blocking call that gives something up
// (a release, a resign, a leave, a stop): such a call must never be
// skipped because the caller's context has ended (the usual pattern is
// `defer c.Release(ctx, held)` with a ctx that may have ended in the
// critical section), and what it gives up must not wait for the session
// to end.
//
// So t is always submitted, and never canceled by ctx: when ctx has
// ended, or ends while t runs, Give returns CtxErr(ctx) at once and t
// goes on in the background on the executor (a nil ctx is one that has
// ended: Give returns executor.ErrNilContext). On an executor's goroutine,
// where waiting would wait forever, t is submitted and Give returns
// executor.ErrOnExecutor without waiting. After the executor has stopped
// it returns task.ErrClosed, unless ctx has ended (nothing is left to
// give up: the connection, and with it the session, is closed).
//
// A failure of t is told once: to the caller if Give returns it, else
// (the caller stopped waiting first, or never could) to the executor's
// Config.OnError, on the executor goroutine, as the failures of other
// flows nobody waits for are; task.ErrClosed excepted, for the reason
// above.
//
// p, if not nil, counts t while it runs (Pending), so that a Client can
// wait for its give-backs before it takes again.
func Give[T any](ctx context.Context, what string, ex *executor.Executor, p *Pending, t task.Task[T]) (T, error) {
	return give(ctx, what, ex, p, t, false, false)
}

// GiveReported is Give for a t that tells the executor's Config.OnError
// of its own failures (partition's Member.Leave reports each refused
// delete as it fails): a failure its caller does not wait for is not
// reported again, so that it is told once.
func GiveReported[T any](ctx context.Context, what string, ex *executor.Executor, p *Pending, t task.Task[T]) (T, error) {
	return give(ctx, what, ex, p, t, false, true)
}

// GiveAcrossExpiry is Give for a give-back that the end of the session
// does not do for it (the delete of a persistent node: a barrier, a
// static registration): when t fails with task.ErrSessionExpired it is
// submitted again, as a flow of its own on the next session, until it
// ends otherwise, whether or not the caller still waits (p counts it
// until then). t must be safe to run again.
func GiveAcrossExpiry[T any](ctx context.Context, what string, ex *executor.Executor, p *Pending, t task.Task[T]) (T, error) {
	return give(ctx, what, ex, p, t, true, false)
}

// submitAcrossExpiry submits t on ex, and again on the next session each
// time it fails with task.ErrSessionExpired; cb gets the last outcome.
func submitAcrossExpiry[T any](ex *executor.Executor, t task.Task[T], cb func(T, error)) {
	executor.Submit(ex, t, func(v T, err error) {
		if errors.Is(err, task.ErrSessionExpired) {
			submitAcrossExpiry(ex, t, cb)
			return
		}
		cb(v, err)
	})
}

// give is Give, GiveAcrossExpiry if across, GiveReported if reported
// (t reports its failures itself).
func give[T any](ctx context.Context, what string, ex *executor.Executor, p *Pending, t task.Task[T], across, reported bool) (T, error) {
	var zero T
	blockErr := executor.CanBlock()
	g := &giving[T]{ch: make(chan giveResult[T], 1)}
	if blockErr != nil || ctx == nil || ctx.Err() != nil {
		g.left = true // decided before t can end: its failure goes to OnError
	}
	p.inc()
	cb := func(v T, err error) {
		p.dec() // once: a flow's outcome is delivered once
		if g.deliver(v, err) && err != nil && !reported && !errors.Is(err, task.ErrClosed) && ex != nil {
			ex.Report(err) // on the executor goroutine: a refused Submit gives ErrClosed
		}
	}
	if across {
		submitAcrossExpiry(ex, t, cb)
	} else {
		executor.Submit(ex, t, cb)
	}
	if blockErr != nil {
		return zero, blockErr
	}
	if g.left {
		return zero, CtxErr(ctx, what)
	}
	// A ctx that ends from here on (t itself may end it, on the executor,
	// before this goroutine looks) goes through leave: once left, t's
	// failure is reported, not dropped in the channel.
	if pk := park.From(ctx); pk != nil { // a simulation's goroutine (the closure is made only then)
		pk.Wait(func() bool { return len(g.ch) > 0 || ctx.Err() != nil })
	}
	select { // an outcome already in wins over a ctx that has ended too
	case r := <-g.ch:
		return r.v, r.err
	default:
		select {
		case r := <-g.ch:
			return r.v, r.err
		case <-ctx.Done():
		}
	}
	if r, ok := g.leave(); ok {
		return r.v, r.err // the outcome came as ctx ended: it is known
	}
	return zero, CtxErr(ctx, what)
}

type giveResult[T any] struct {
	v   T
	err error
}

// giving hands a give-back's outcome to its caller, or, once the caller
// has left, says that no one will hear it.
type giving[T any] struct {
	mu   sync.Mutex
	left bool // the caller no longer waits
	ch   chan giveResult[T]
}

// deliver passes the outcome to the caller; true if the caller has left.
func (g *giving[T]) deliver(v T, err error) (left bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.left {
		return true
	}
	g.ch <- giveResult[T]{v, err}
	return false
}

// leave marks the caller gone, unless the outcome has come: then it
// returns it.
func (g *giving[T]) leave() (giveResult[T], bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case r := <-g.ch:
		return r, true
	default:
		g.left = true
		return giveResult[T]{}, false
	}
}

// Owned checks that a handle taken on owner may be given back through a
// Client on ex (the executor the handle was taken on): otherwise it
// returns notOurs. A handle taken through the task face has no owner and
// is refused.
func Owned(ex, owner *executor.Executor, notOurs error) error {
	if owner == nil || owner != ex {
		return notOurs
	}
	return nil
}

// Pending counts the give-backs of a Client still running in the
// background (Give, Background), and any other work of the Client that
// deletes a node of its own nobody waits for (Add: the cleanup of an
// attempt that failed, the delete that follows a lost hold), so that
// the Client's next take waits for them (Wait) instead of finding its
// own node in its way. Count only work that ends without waiting for
// other clients: a take waits for all of it. The zero value is ready; a
// nil *Pending counts nothing. Safe from any goroutine.
type Pending struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

// Add counts one piece of background work of the Client (a cleanup it
// starts itself, as a canceled Enter's) and returns the function that
// ends it, to be called once that work has ended, whatever its outcome
// (more calls do nothing).
func (p *Pending) Add() func() { return p.add() }

// Begin counts one piece of background work, as Add does, for work whose
// end is one call (a flow's outcome): End, called exactly once for each
// Begin, ends it. Nil counts nothing.
func (p *Pending) Begin() { p.inc() }

// End ends one piece of work Begin counted.
func (p *Pending) End() { p.dec() }

// Background submits t to ex as a flow nobody waits for (what undoes a
// Take whose caller stopped waiting: the release of a lock taken just as
// ctx ended), counted in p from now until it ends, whatever its outcome,
// so that the Client's next take waits for it (Wait) rather than meet
// what t gives back still there. A failure goes to the executor's
// Config.OnError, as the failures of other flows nobody waits for do;
// task.ErrClosed excepted (the connection, and with it the session, is
// closed). Any goroutine; a nil p counts nothing.
func Background[T any](ex *executor.Executor, p *Pending, t task.Task[T]) {
	done := p.add()
	executor.Submit(ex, t, func(_ T, err error) {
		done()
		if err != nil && !errors.Is(err, task.ErrClosed) && ex != nil {
			ex.Report(err) // on the executor goroutine: a refused Submit gives ErrClosed
		}
	})
}

// BackgroundAcrossExpiry is Background for a give-back that the end of
// the session does not do for it (GiveAcrossExpiry): when t fails with
// task.ErrSessionExpired it is submitted again on the next session, still
// counted in p, until it ends otherwise. t must be safe to run again.
func BackgroundAcrossExpiry[T any](ex *executor.Executor, p *Pending, t task.Task[T]) {
	done := p.add()
	submitAcrossExpiry(ex, t, func(_ T, err error) {
		done()
		if err != nil && !errors.Is(err, task.ErrClosed) && ex != nil {
			ex.Report(err)
		}
	})
}

// add counts one piece of work and returns the function that ends it
// (once).
func (p *Pending) add() func() {
	if p == nil {
		return func() {}
	}
	p.inc()
	var once sync.Once
	return func() { once.Do(p.dec) }
}

// inc counts one give-back; dec, called exactly once for each inc, ends
// it. Nil counts nothing.
func (p *Pending) inc() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.n++
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	p.mu.Unlock()
}

func (p *Pending) dec() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n--; p.n == 0 {
		close(p.idle)
		p.idle = nil
	}
}

// Wait waits until no give-back counted in p runs, or ctx ends (then
// CtxErr(ctx)); a nil ctx is refused (executor.ErrNilContext).
func (p *Pending) Wait(ctx context.Context, what string) error {
	if ctx == nil {
		return nilCtx(what)
	}
	if p == nil {
		return nil
	}
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	if idle == nil {
		return nil
	}
	park.Wait(ctx, func() bool { return park.Closed(idle) || ctx.Err() != nil })
	if park.Closed(idle) { // idle already wins over a ctx that has ended too
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return CtxErr(ctx, what)
	}
}

// GiveThenWait is Give for a t that gives something up and then waits
// for others (a double barrier's Leave), where waiting on after ctx ends
// would serve no one. t is always submitted; when ctx has ended, or ends
// before t does, the flow is canceled and GiveThenWait returns
// CtxErr(ctx) at once. What is given up is given up all the same: t must
// give up in a cleanup that outlives its cancellation (task.Scope.Defer),
// and a flow canceled before it started runs giveUp instead, in the
// background. On an executor's goroutine it submits giveUp and returns
// executor.ErrOnExecutor; with a nil ctx, executor.ErrNilContext.
//
// p, if not nil, counts the give-up from the submission until t has
// started (t counts what it gives up in p itself from then on, and only
// that: not its wait for the others), or, when t never starts, until
// giveUp has ended: so that the Client's next take waits for it.
func GiveThenWait[T any](ctx context.Context, what string, ex *executor.Executor, p *Pending, t task.Task[T], giveUp task.Task[task.Unit]) (T, error) {
	var zero T
	if err := executor.CanBlock(); err != nil {
		Background(ex, p, giveUp)
		return zero, err
	}
	if ctx == nil {
		Background(ex, p, giveUp)
		return zero, nilCtx(what)
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	started := false // executor goroutine only
	p.inc()
	f := executor.Submit(ex, task.Task[T](func(s *task.Scope, k task.Cont[T]) {
		started = true
		t(s, k)
		p.dec()
	}), func(v T, err error) {
		if !started {
			if errors.Is(err, task.ErrClosed) {
				p.dec()
			} else {
				Background(ex, p, giveUp) // canceled in the queue: t never ran
				p.dec()
			}
		}
		ch <- result{v, err}
	})
	if ctx.Err() == nil {
		if pk := park.From(ctx); pk != nil { // a simulation's goroutine (the closure is made only then)
			pk.Wait(func() bool { return len(ch) > 0 || ctx.Err() != nil })
		}
		select { // an outcome already in wins over a ctx that has ended too
		case r := <-ch:
			return r.v, r.err
		default:
			select {
			case r := <-ch:
				return r.v, r.err
			case <-ctx.Done():
			}
		}
	}
	f.Cancel()
	return zero, CtxErr(ctx, what)
}

// Await is executor.Await with its context's end named by what (Named).
func Await[T any](ctx context.Context, what string, ex *executor.Executor, t task.Task[T]) (T, error) {
	v, err := executor.Await(ctx, ex, t)
	return v, Named(what, err)
}

// AwaitAcrossExpiry is executor.AwaitAcrossExpiry with its context's end
// named by what (Named).
func AwaitAcrossExpiry[T any](ctx context.Context, what string, ex *executor.Executor, t task.Task[T]) (T, error) {
	v, err := executor.AwaitAcrossExpiry(ctx, ex, t)
	return v, Named(what, err)
}

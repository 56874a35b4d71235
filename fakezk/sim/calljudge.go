package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/task"
)

// A Call is one call of a blocking face (a recipe's Client: a task chain
// run on an executor, waited for until the caller's context ends) made by
// an actor, as it began. Call.Judge says whether its outcome is one such
// a face's doc allows under the world's faults, so that a scenario of a
// blocking face says only what its calls may do beyond the rules every
// such call shares (CallRules):
//
//   - nil, or anything once the world closes;
//   - a context's end (task.ErrCanceled, task.ErrDeadlineExceeded) only
//     once the call's context has ended, and matching ctx.Err(): a
//     context that lives never fails a call;
//   - no other error but those the rules allow (CallRules.May, Expiry,
//     First, Also, Refused): no connection loss or "not sent" unless the
//     rules allow it, since a face retries past them;
//   - a call made with a context that had ended already returns that
//     context's error at once: it sends nothing, or leaves its work to
//     the background, and waits for nothing (judged by the simulated
//     clock, or by the call's waits: BeginCallCounted).
type Call struct {
	r            *Trial
	a            *Actor
	ctx          context.Context
	over, paused bool
	from         time.Time
	pauses       int
	waits        *callWaits // the waits counted (BeginCallCounted), nil if not
}

// BeginCall records actor a's call with ctx as it begins: whether ctx had
// ended, the simulated clock, whether a's process is paused and how many
// times it was. A call made with a context that had ended is judged by
// the clock: no simulated time passes before it returns (but as
// CallRules.Parks allows).
func BeginCall(r *Trial, a *Actor, ctx context.Context) Call {
	i := a.Client()
	return Call{r: r, a: a, ctx: ctx, over: ctx.Err() != nil, paused: r.Paused(i), from: r.Clock.Now(), pauses: r.Pauses(i)}
}

// BeginCallCounted is BeginCall for a call judged by its waits rather
// than the clock: it returns the context to make the call with, ctx
// itself while ctx lives, and once ctx has ended ctx carrying a's Parker
// wrapped to count the call's waits that are not ready at once (the
// call waits for something: an outcome, a delete in the background), as
// one made with such a context never does. (Not the clock: an actor that
// parks with its wait ready may still wake late, Scenario.ActorLag, or
// its process be paused.)
func BeginCallCounted(r *Trial, a *Actor, ctx context.Context) (Call, context.Context) {
	c := BeginCall(r, a, ctx)
	if !c.over {
		return c, ctx
	}
	c.waits = &callWaits{Parker: park.From(ctx)}
	return c, context.WithValue(ctx, park.Key, park.Parker(c.waits))
}

// callWaits is the Parker of a call counted by BeginCallCounted: the
// actor's own, counting the waits not ready at once.
type callWaits struct {
	park.Parker
	n int
}

func (p *callWaits) Wait(ready func() bool) {
	if !ready() {
		p.n++
	}
	p.Parker.Wait(ready)
}

// Over reports whether the call's context had ended before it began.
func (c Call) Over() bool { return c.over }

// LateWake is the most a wake-up of an actor comes late by the clock
// (Scenario.ActorLag: a goroutine the scheduler runs late): how late a
// call that parks (CallRules.Parks) may return its ended context's
// error.
const LateWake = 200 * time.Millisecond

// Expiry says how a call may end with task.ErrSessionExpired
// (CallRules.Expiry).
type Expiry uint8

const (
	// ExpiryByMay: as any other error, if CallRules.May has it.
	ExpiryByMay Expiry = iota
	// ExpiryNever: never (the call runs again on the next session, or
	// waits past it; CallRules.ExpiryWhy says which).
	ExpiryNever
	// ExpiryOnceEnded: only once the call's context has ended; until
	// then the call runs again on the next session.
	ExpiryOnceEnded
)

// CallRules are what one call of a blocking face may end with beyond nil
// and its context's end, in the order Call.Judge looks: First, a
// context's end, Expiry, Also, May, Refused; anything else is a
// violation.
type CallRules struct {
	// First, if not nil, judges err before anything else, saying why it
	// may not be the call's outcome ("" if it may) and whether it judged
	// it at all: a face's own errors that wrap their cause (a context's
	// end, a connection loss), or a view's end the scenario saw.
	First func(err error) (why string, judged bool)
	// Expiry says how task.ErrSessionExpired is judged; ExpiryWhy, if
	// not "", says in a violation why ExpiryNever holds.
	Expiry    Expiry
	ExpiryWhy string
	// Also, if not nil, judges err after a context's end and an expiry
	// (as First does): errors the call may end with only in a state the
	// scenario knows (a re-entry refused while the caller holds, a
	// cache's end).
	Also func(err error) (why string, judged bool)
	// May are the errors the call may end with (under errors.Is), such
	// as task.ErrNoAuth, an operator's ACL refusing it for a while.
	May []error
	// Refused are errors a call made with a context that had ended may
	// return at once instead of that context's error (a re-entry
	// refused). Refused does not allow them: First, Also or May must.
	Refused []error
	// RefusesAtOnce says the call returns a Refused error at once
	// whatever its context, before it waits for anything: no simulated
	// time passes before it returns one.
	RefusesAtOnce bool
	// Ready says the call hands over what is ready before it looks at
	// its context (a view's next difference): a call made with a context
	// that had ended is not judged by AtOnce.
	Ready bool
	// Parks says a call made with a context that had ended may park
	// before it looks at it (behind its Client's give-backs in the
	// background): it may then wake late, by up to LateWake, or later if
	// its process was paused, the clock's jumps not counted. Not used by
	// a call counted by its waits.
	Parks bool
}

// Judge reports, as violations of r, why err may not be the outcome of
// call what (named in the message with its client) under rules: the
// error (Why), a refusal not at once (rules.RefusesAtOnce), and for a
// call made with a context that had ended, judged unless rules.Ready or
// its actor has been killed meanwhile, an outcome not that context's
// error at once (AtOnce). It reports whether the call was judged as one
// made with a context that had ended.
func (c Call) Judge(what string, err error, rules CallRules) (atOnce bool) {
	i := c.a.Client()
	if c.over && !rules.Ready && !c.a.Killed() {
		atOnce = true
		if why := c.AtOnce(err, rules); why != "" {
			c.r.Errorf("client %d: %s: %s", i, what, why)
		}
	}
	if why := c.Why(err, rules); why != "" {
		c.r.Errorf("client %d: %s: %v: %s", i, what, err, why)
	}
	if late := c.r.Clock.Now().Sub(c.from); rules.RefusesAtOnce && late != 0 && !c.r.Closing() && isOneOf(err, rules.Refused) {
		c.r.Errorf("client %d: %s: %v after %v: it refuses at once", i, what, err, late)
	}
	return atOnce
}

// Why says why err may not be the outcome of the call under rules, or ""
// if it may (the order of CallRules).
func (c Call) Why(err error, rules CallRules) string {
	if err == nil || c.r.Closing() {
		return ""
	}
	if rules.First != nil {
		if why, judged := rules.First(err); judged {
			return why
		}
	}
	switch {
	case errors.Is(err, task.ErrCanceled), errors.Is(err, task.ErrDeadlineExceeded):
		switch {
		case c.ctx.Err() == nil:
			return "a context's error while its context lives"
		case !errors.Is(err, c.ctx.Err()):
			return fmt.Sprintf("not its context's error (%v)", c.ctx.Err())
		}
		return ""
	case rules.Expiry != ExpiryByMay && errors.Is(err, task.ErrSessionExpired):
		switch {
		case rules.Expiry == ExpiryNever && rules.ExpiryWhy != "":
			return "session expiry, which it never ends with (" + rules.ExpiryWhy + ")"
		case rules.Expiry == ExpiryNever:
			return "session expiry, which it never ends with"
		case c.ctx.Err() == nil:
			return "session expiry while its context lives (it runs again on the next session)"
		}
		return ""
	}
	if rules.Also != nil {
		if why, judged := rules.Also(err); judged {
			return why
		}
	}
	switch {
	case isOneOf(err, rules.May):
		return ""
	case task.IsRetryable(err):
		return "an error a retry settles (it is retried past a connection loss or \"not sent\")"
	}
	return "not an error it may end with"
}

// AtOnce says why err may not be the outcome of a call made with a
// context that had ended before it, or "": that context's error (or one
// of rules.Refused), returned at once: with no wait not ready at once if
// counted (BeginCallCounted), else with no simulated time passed, but
// for a call that parks (rules.Parks), whose wake-up may come late.
func (c Call) AtOnce(err error, rules CallRules) string {
	now := c.r.Clock.Now()
	late := now.Sub(c.from)
	refused := isOneOf(err, rules.Refused)
	switch {
	case c.r.Closing():
		return ""
	case !errors.Is(err, c.ctx.Err()) && !refused:
		return fmt.Sprintf("its context had ended (%v), and it returned %v", c.ctx.Err(), err)
	case c.waits != nil:
		if c.waits.n > 0 {
			return fmt.Sprintf("its context had ended, and it returned %v after waiting %d times", err, c.waits.n)
		}
		return ""
	case late == 0, refused && rules.RefusesAtOnce: // (then judged by Judge)
		return ""
	case !rules.Parks:
		return fmt.Sprintf("its context had ended, and it returned %v after %v", err, late)
	case c.paused || c.r.Pauses(c.a.Client()) != c.pauses:
		return "" // (its process was paused: it woke when thawed)
	case late-c.r.Jumped(c.from, now) > LateWake:
		return fmt.Sprintf("its context had ended, and it returned %v after %v", err, late)
	}
	return ""
}

// isOneOf reports whether err is one of errs under errors.Is.
func isOneOf(err error, errs []error) bool {
	for _, e := range errs {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// EndedWith is a rule (CallRules.Also) for a call that ends with an error
// only once the object it reads from has ended (a cache's Next): with
// that object's error, ended's, which must be one of by (the object ends
// only with those while the world runs); what names the object in a
// violation.
func EndedWith(what string, ended func() error, by ...error) func(error) (string, bool) {
	return func(err error) (string, bool) {
		switch e := ended(); {
		case e == nil:
			return "an error, and the " + what + " has not ended", true
		case !errors.Is(err, e):
			return fmt.Sprintf("not the %s's error (%v)", what, e), true
		case !isOneOf(e, by):
			return fmt.Sprintf("the %s ended with %v while it ran", what, e), true
		}
		return "", true
	}
}

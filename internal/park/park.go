// Package park lets a deterministic simulation run the goroutines that
// call the library's blocking APIs (executor.Await, the recipes' Clients)
// in lockstep with the world it steps, so that one seed still gives one
// history.
//
// A blocking call that is about to wait in a select whose cases only the
// world can make ready (a flow's outcome, a context's end, a channel
// closed by another such goroutine) calls Wait first, with the context it
// was given and a predicate saying whether the select would return now.
// Outside a simulation the context carries no Parker and Wait returns at
// once: one atomic load while no simulation has ever run in the process,
// a context lookup after. Inside one (fakezk/sim's actors), the Parker
// the context carries blocks the goroutine until the world, which checks
// the predicate between its steps, hands it the turn; by then the select
// finds a case ready. The world never steps while such a goroutine runs,
// and runs them one at a time in an order of its own: no scheduling of
// the Go runtime shows in the history.
//
// Go starts a goroutine a blocking call needs on the side (one that waits
// for a leadership to end, say) as an actor of the same simulation, or as
// a plain goroutine outside one.
package park

import (
	"context"
	"sync/atomic"
)

// Parker is what a simulation puts in the contexts of the goroutines it
// runs (NewContext, or a context type of its own answering Key).
type Parker interface {
	// Wait blocks until ready holds and the simulation lets the calling
	// goroutine run on. ready is called on the simulation's goroutine.
	Wait(ready func() bool)
	// Go runs f on a new goroutine under the same simulation, with the
	// Parker of that goroutine.
	Go(f func(Parker))
}

type key struct{}

// Key is the context key under which a Parker is found: a context type
// of a simulation returns its Parker from Value(Key).
var Key any = key{}

var used atomic.Bool // a Parker was ever put in a context

// Enable records that Parkers are in use: until it is called, Wait and Go
// do not look into contexts. A simulation calls it before its first
// actor runs.
func Enable() { used.Store(true) }

// NewContext returns a context carrying p (and calls Enable).
func NewContext(parent context.Context, p Parker) context.Context {
	Enable()
	return context.WithValue(parent, Key, p)
}

// From returns the Parker ctx carries, or nil.
func From(ctx context.Context) Parker {
	if !used.Load() || ctx == nil {
		return nil
	}
	p, _ := ctx.Value(Key).(Parker)
	return p
}

// Wait is called by a goroutine about to block in a select that ready
// says would return (a result there, ctx ended, ...). Outside a
// simulation it returns at once.
func Wait(ctx context.Context, ready func() bool) {
	if p := From(ctx); p != nil {
		p.Wait(ready)
	}
}

// Go runs f on a new goroutine: an actor of the simulation ctx carries
// (f's context then carries the new actor's Parker), or a plain
// goroutine given ctx.
func Go(ctx context.Context, f func(ctx context.Context)) {
	if p := From(ctx); p != nil {
		p.Go(func(np Parker) { f(context.WithValue(ctx, Key, np)) })
		return
	}
	go f(ctx)
}

// Closed reports whether ch is closed, without blocking: a ready
// predicate for a select on a channel that is only ever closed, never
// sent on (a value sent on it would be taken).
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

package task

import "time"

// Frames is the state the task package keeps on each Runtime: how deep Run
// and Resume have nested in the job the runtime is running (past a bound
// they trampoline through Schedule) and the Flow bodies alive. A Runtime
// implementation embeds a Frames, which gives it the one method of
// Runtime that is not exported; it calls NewJob before each job it runs
// and Unwind when it is abandoned. Users need none of this: the executor
// does it.
type Frames struct {
	depth     int
	bodies    bodies
	freeSends *sendWait   // requests' waits free for reuse (send)
	values    map[any]any // RuntimeValue
	recheck   time.Duration
	// report is the continuation of a Task[Unit] flow nobody waits for
	// (Go's, with no done): made once (reporter).
	report Cont[Unit]
}

// SetWatchRecheck sets how long a Wait on a watch of the runtime waits
// for its notification before it reads the watched node again (see
// Watch): 0 (the default) means RecheckAfter of the session's timeout;
// a negative d, never. The executor sets it from its Config.
func SetWatchRecheck(fr *Frames, d time.Duration) { fr.recheck = d }

// WatchRecheck returns how long a Wait on a watch in s waits for its
// notification before it reads the watched node again (see Watch): the
// runtime's setting (executor.Config.WatchRecheck), else RecheckAfter of
// the session's timeout; negative: never. For a recipe that reads again
// by itself what its watches cannot (the nodes under a recursive watch,
// which has no re-read of its own), so that it follows the same setting.
func WatchRecheck(s *Scope) time.Duration {
	if d := s.env.rt.frames().recheck; d != 0 {
		return d
	}
	return RecheckAfter(s.env.session.Timeout)
}

func (fr *Frames) frames() *Frames { return fr }

// NewJob starts the count of nested Run and Resume calls afresh, for the
// job the runtime is about to run; no Flow body is running then.
func NewJob(fr *Frames) { fr.depth, fr.bodies.running = 0, nil }

// Unwind ends every Flow body alive on the runtime without resuming it:
// each suspended body is unwound from its Await (its deferred functions
// run, and an Await they make returns ErrUnwound) and its goroutine exits;
// no continuation is called. It is for a runtime that will never run
// again (a simulated process that crashed); it must be called on the
// goroutine that drives the runtime, between its jobs.
func Unwind(fr *Frames) { fr.bodies.unwind() }

// RuntimeValue returns the value kept under key on rt (an executor),
// made by mk and kept the first time it is asked for. Code that keeps
// state per executor (a recipe's watches shared by its calls, say) keeps
// it here rather than in a package-level map keyed by the executor: the
// state goes with the executor, closed or abandoned, and no lock is
// needed. key is compared as a map key: a pointer to an unexported
// package variable of non-zero size (pointers to distinct zero-size
// variables may be equal) cannot collide with another package's. Called
// on rt's executor goroutine only; T must be the type mk returns for key.
func RuntimeValue[T any](rt Runtime, key any, mk func() T) T {
	fr := rt.frames()
	if v, ok := fr.values[key]; ok {
		return v.(T)
	}
	if fr.values == nil {
		fr.values = map[any]any{}
	}
	v := mk()
	fr.values[key] = v
	return v
}

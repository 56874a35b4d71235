package combinators

import "github.com/zkflow/zkflow/task"

// Loop runs body while cond holds, threading a state through it:
//
//	st := init; for cond(st) { st = <run body(st)> }; return st
//
// An error of body ends the loop with that error. Every iteration starts
// at a step boundary (a deadline or cancel stops the loop). Iterations that
// complete synchronously run in a plain for loop, and asynchronous ones
// re-enter it from their continuation, so an endless loop neither grows the
// stack nor allocates per iteration beyond what body allocates. After 64
// synchronous iterations in a row the next goes through the executor's task
// queue, so an endless loop of synchronous bodies lets other flows run and
// Close stop it. A nil cond or body gives a task that fails with
// task.ErrInvalidArgument.
func Loop[S any](init S, cond func(S) bool, body func(S) task.Task[S]) task.Task[S] {
	switch {
	case cond == nil:
		return task.Fail[S](nilFunc("Loop", "cond"))
	case body == nil:
		return task.Fail[S](nilFunc("Loop", "body"))
	}
	return func(s *task.Scope, k task.Cont[S]) {
		d := &loopDriver[S]{s: s, k: k, st: init, cond: cond, body: body}
		d.cb = d.done
		d.drive()
	}
}

type loopDriver[S any] struct {
	spin
	s    *task.Scope
	k    task.Cont[S]
	st   S
	cond func(S) bool
	body func(S) task.Task[S]
	cb   task.Cont[S]
}

func (d *loopDriver[S]) done(v S, err error) {
	if err != nil {
		var zero S
		task.Resume(d.s, d.k, zero, err)
		return
	}
	d.st = v
	d.next(d.drive)
}

func (d *loopDriver[S]) drive() {
	if d.run(d.iterate) {
		if d.resume == nil {
			d.resume = d.drive
		}
		d.s.Schedule(d.resume)
	}
}

func (d *loopDriver[S]) iterate() bool {
	if err := d.s.Err(); err != nil {
		var zero S
		task.Resume(d.s, d.k, zero, err)
		return false
	}
	if !d.cond(d.st) {
		task.Resume(d.s, d.k, d.st, nil)
		return false
	}
	task.Run(d.s, d.body(d.st), d.cb)
	return true
}

package task_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// Flow: a body is resumed "at once with the scope's error when the scope
// ends (deadline, cancel, session expiry, Close)"; FLOWS.md: "after the
// scope ended ..., every Await returns the error without a reconnect, past
// the 64 in a row too".
//
// The scope ends while the session is connected, and the connection is
// lost before the task queue runs the body's bounced resume (the lost
// connection's event comes in during the same job, and the executor runs
// its event queue first). The bounce went through the task queue alone:
// the event-queue resume was queued only if the session was already
// suspended when the scope ended or when the body bounced, so the body
// stalled until a reconnect.
//   - "bounced, then ended": the body has made 65 synchronous Awaits (its
//     next resume queued), then the scope is canceled;
//   - "ended, then bounced": the body waits; the cancel resumes it, its
//     next 64 Awaits return the error at once and it bounces.
func TestBouncedBodyReturnsAfterScopeEndedThenSuspended(t *testing.T) {
	for _, how := range []string{"bounced, then ended", "ended, then bounced"} {
		t.Run(how, func(t *testing.T) {
			r := rig.New(t)
			n := 0
			finished := false
			body := task.Flow(func(f *task.F) (int, error) {
				if how == "ended, then bounced" {
					if _, err := task.Await(f, parked); err == nil {
						return 0, errors.New("parked returned")
					}
				}
				for i := 0; i < 100; i++ {
					task.Await(f, task.Value(i))
					n++
				}
				finished = true
				return 0, nil
			})
			inFlowScope(r, func(s *task.Scope) {
				c := s.Child()
				task.Run(c, body, func(int, error) {})
				c.Cancel(nil)
				r.Conn.Suspend() // the executor hears it before its next task
			})
			r.Advance(0) // the event queue's next turn
			if !finished {
				t.Fatalf("scope ended, then the session suspended: the body made %d of its 100 Awaits and has not returned", n)
			}
		})
	}
}

// The same promise, for a body resumed deep in the stack: a cancel made
// by a step nested 64 deep (where Run and Resume trampoline through the
// task queue) resumes the waiting body there; its next Await, in the
// ended scope, handed the error to the body through Resume, which queued
// it on the task queue, and the connection lost in the same job kept the
// body waiting for a reconnect.
func TestAwaitInEndedScopeReturnsAtOnceWhenResumedDeep(t *testing.T) {
	r := rig.New(t)
	n := 0
	finished := false
	body := task.Flow(func(f *task.F) (int, error) {
		if _, err := task.Await(f, parked); err == nil {
			return 0, errors.New("parked returned")
		}
		for i := 0; i < 100; i++ {
			task.Await(f, task.Value(i))
			n++
		}
		finished = true
		return 0, nil
	})
	deep := false
	inFlowScope(r, func(s *task.Scope) {
		c := s.Child()
		task.Run(c, body, func(int, error) {})
		acted := false
		var nest task.Task[task.Unit]
		nest = func(s *task.Scope, k task.Cont[task.Unit]) {
			if acted {
				k(task.Unit{}, nil)
				return
			}
			ran := false
			task.Run(s, task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
				ran = true
				nest(s, k)
			}), func(task.Unit, error) {})
			if !ran && !acted { // Run trampolined: this step runs as deep as steps nest
				acted, deep = true, true
				c.Cancel(nil)
				r.Conn.Suspend() // the executor hears it before its next task
			}
			k(task.Unit{}, nil)
		}
		task.Run(s, nest, func(task.Unit, error) {})
	})
	r.Advance(0) // the event queue's next turn
	if !deep {
		t.Fatal("the steps did not nest deep enough to trampoline")
	}
	if !finished {
		t.Fatalf("scope canceled deep in the stack, then the session suspended: the body made %d of its 100 Awaits and has not returned", n)
	}
}

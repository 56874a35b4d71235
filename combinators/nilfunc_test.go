package combinators_test

import (
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// The package doc: "Every combinator calls its continuation exactly once,
// on the executor goroutine". Given a nil function, Then, Map, Catch and
// Loop built a task that panicked with a nil dereference on the executor
// goroutine when it came to call it (when a succeeded, when a failed,
// at the first iteration), and so never called its continuation: under
// Run the panic stops the executor and ends every other flow with it. A
// nil task fails with task.ErrNilTask and a nil flow body with
// task.ErrNilFlowBody; a nil function now fails the same way, with
// task.ErrInvalidArgument. (This test failed on the code before the fix:
// each case panicked.)
func TestNilFunctionsFailWithInvalidArgument(t *testing.T) {
	always := func(int) bool { return true }
	step := func(i int) task.Task[int] { return task.Value(i + 1) }
	cases := []struct {
		name string
		t    task.Task[int]
	}{
		{"Then", c.Then[int, int](task.Value(1), nil)},
		{"Map", c.Map[int, int](task.Value(1), nil)},
		{"Catch", c.Catch(task.Fail[int](errBoom), nil)},
		{"Loop cond", c.Loop(0, nil, step)},
		{"Loop body", c.Loop(0, always, nil)},
		// OnError with errors to handle and no handler returned a itself:
		// the errors named went through unhandled, silently.
		{"OnError handler", c.OnError(task.Fail[int](errBoom), nil, errBoom)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rig.New(t)
			o := rig.Submit(r, tc.t)
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("the executor goroutine panicked: %v", p)
					}
				}()
				r.Idle()
			}()
			o.Want(t, 1, task.ErrInvalidArgument)
		})
	}
}

package task_test

import (
	"testing"

	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// The package doc: a task's "continuation is called exactly once, on the
// executor goroutine". Func(nil) built a task that panicked with a nil
// dereference on the executor goroutine, its continuation never called;
// like a nil task (ErrNilTask) and Flow(nil) (ErrNilFlowBody) it now
// fails, with ErrNilTask. (This test failed on the code before the fix.)
func TestFuncNilFailsWithNilTask(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, task.Func[int](nil))
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("the executor goroutine panicked: %v", p)
			}
		}()
		r.Idle()
	}()
	o.Want(t, 1, task.ErrNilTask)
}

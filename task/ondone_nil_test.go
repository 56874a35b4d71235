package task_test

import (
	"testing"

	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// OnDone(nil) registers nothing: a nil callback was taken for none in the
// first slot only; as a second one, or on a scope canceled already, it
// was called, and panicked (this test failed on the code before the fix).
func TestOnDoneNilRegistersNothing(t *testing.T) {
	r := rig.New(t)
	for _, name := range []string{"second", "after cancel"} {
		t.Run(name, func(t *testing.T) {
			o := rig.Submit(r, task.Func(func(s *task.Scope) (task.Unit, error) {
				c := s.Child()
				defer c.Close()
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("OnDone(nil) panicked: %v", p)
					}
				}()
				if name == "second" {
					c.OnDone(func(error) {})
					c.OnDone(nil)
					c.Cancel(nil)
				} else {
					c.Cancel(nil)
					c.OnDone(nil)
				}
				return task.Unit{}, nil
			}))
			r.Idle()
			o.Want(t, 1, nil)
		})
	}
}

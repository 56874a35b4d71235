package masterworker_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// The package doc: an operator who deletes a task's own node deletes the
// task. Here the assignment goes while its handler runs: the worker
// writes no status and serves on, a Wait for the task ends only with its
// deadline, and Find finds nothing.
func TestOperatorDeletingAnAssignmentDeletesTheTask(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	m, _ := sys.Master("m")
	running := false
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] {
		running = true
		return c.Map(c.Sleep(time.Second), func(task.Unit) []byte { return j.Data })
	})
	mo := sim.Submit(w, 0, m.Run())
	wo := sim.Submit(w, 1, wk.Run())
	if !w.Settle(func() bool { return m.Primary() && wk.Registered() }) {
		t.Fatal("no primary or no worker")
	}
	name, err := sim.Run(w, 2, sys.Submit("c_1", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return running }) {
		t.Fatal("the task never ran")
	}
	if err := w.Server.AdminDelete(sys.AssignPath("w1") + "/" + name); err != nil {
		t.Fatal(err)
	}
	_, err = sim.Run(w, 2, c.Deadline(sys.Wait(name), w.Clock.Now().Add(30*time.Second)))
	if !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("Wait for a task whose assignment an operator deleted: %v; want the deadline", err)
	}
	if found, err := sim.Run(w, 2, sys.Find("c_1")); err != nil || found != "" {
		t.Fatalf("Find after the delete = %q, %v; want nothing", found, err)
	}
	if wo.Done || mo.Done {
		t.Fatalf("the worker or the master ended: %v, %v", wo.Err, mo.Err)
	}
}

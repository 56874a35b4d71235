package executor_test

import (
	"errors"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// Config.Seed seeds the source behind Scope.Rand: two executors with the
// same seed draw the same numbers, another seed draws others, and seed 0
// picks a random seed.
func TestSeedSeedsRand(t *testing.T) {
	draws := func(seed uint64) [4]uint64 {
		ex, err := executor.New(executor.Config{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		defer ex.Shutdown()
		var out [4]uint64
		executor.Submit(ex, task.Func(func(s *task.Scope) (task.Unit, error) {
			for i := range out {
				out[i] = s.Rand()
			}
			return task.Unit{}, nil
		}), nil)
		ex.RunUntilIdle()
		return out
	}
	if a, b := draws(7), draws(7); a != b {
		t.Errorf("seed 7 drew %x, then %x", a, b)
	}
	if a, b := draws(7), draws(8); a == b {
		t.Errorf("seeds 7 and 8 both drew %x", a)
	}
	if a, b := draws(0), draws(0); a == b {
		t.Errorf("seed 0 drew %x twice: not a random seed", a)
	}
}

// The zero Config is valid: with no connection nothing pauses and every
// operation fails with task.ErrClosed.
func TestZeroConfigOperationsFailClosed(t *testing.T) {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	if ex.Paused() {
		t.Error("an executor without a connection is paused")
	}
	o := &rig.Outcome[task.Data]{}
	executor.Submit(ex, task.Get("/a"), o.K)
	ex.RunUntilIdle()
	o.Want(t, 1, task.ErrClosed)
}

// Step reports whether it ran a job, RunUntilIdle returns how many it ran,
// and Steps counts every job run so far.
func TestStepCounts(t *testing.T) {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	submit := func(n int) {
		for range n {
			executor.Submit(ex, task.Value(1), nil)
		}
	}
	submit(3)
	stepped := uint64(0)
	for ex.Step() {
		stepped++
	}
	if stepped < 3 || ex.Steps() != stepped {
		t.Fatalf("Step ran %d jobs for 3 flows, Steps = %d", stepped, ex.Steps())
	}
	submit(5)
	n := ex.RunUntilIdle()
	if n < 5 || ex.Steps() != stepped+uint64(n) {
		t.Fatalf("RunUntilIdle = %d for 5 flows, Steps went from %d to %d", n, stepped, ex.Steps())
	}
	if n := ex.RunUntilIdle(); n != 0 {
		t.Fatalf("RunUntilIdle on an idle executor = %d", n)
	}
}

// Nothing is dropped however many jobs wait: flows submitted before the
// executor takes a step all run, in the order they were submitted.
func TestManyWaitingFlowsRunInOrder(t *testing.T) {
	r := rig.New(t)
	const n = 1000
	var order []int
	for i := range n {
		executor.Submit(r.Ex, task.Func(func(*task.Scope) (task.Unit, error) {
			order = append(order, i)
			return task.Unit{}, nil
		}), nil)
	}
	r.Idle()
	if len(order) != n {
		t.Fatalf("%d of %d flows ran", len(order), n)
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("flow %d ran in place %d", v, i)
		}
	}
}

// A watch event joins the task queue: while the session is suspended it
// waits, and on reconnect the flow waiting on the watch hears it.
func TestWatchEventWaitsForReconnect(t *testing.T) {
	r := rig.New(t)
	o := rig.Submit(r, c.Then(task.ExistsW("/a"), func(sw task.StatWatch) task.Task[task.Event] {
		return sw.Watch.Wait()
	}))
	r.Idle()
	call := r.Conn.Pending()[0]
	call.Reply(task.Response{Stat: task.Stat{Version: 1}})
	r.Idle()
	o.Want(t, 0, nil)
	r.Conn.Suspend()
	r.Idle()
	call.Fire(task.Event{Type: task.EventNodeDataChanged, Path: "/a"})
	r.Idle()
	o.Want(t, 0, nil)
	r.Conn.Connect(1)
	r.Idle()
	o.Want(t, 1, nil)
	if o.V.Type != task.EventNodeDataChanged || o.V.Path != "/a" {
		t.Fatalf("the watch delivered %+v", o.V)
	}
}

// Config.OnError hears the failures of flows nobody waits for, and
// nothing else: not a detached flow that succeeds, not a clean shutdown.
func TestOnErrorHearsOnlyFailures(t *testing.T) {
	r := rig.New(t)
	boom := errors.New("boom")
	executor.Submit(r.Ex, task.Value(1), nil)
	executor.Submit(r.Ex, task.Fail[int](boom), nil)
	r.Idle()
	r.Ex.Shutdown()
	if len(r.Errs) != 1 || !errors.Is(r.Errs[0], boom) {
		t.Fatalf("OnError heard %v, want only %v", r.Errs, boom)
	}
}

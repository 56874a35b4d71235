package task_test

import (
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// claim claims job with an ephemeral node; on NodeExists it reads the
// node, since after a lost reply the node may be its own create's. It
// awaits through f, so it is called from a body (as its go-zookeeper
// twin is called with a *zk.Conn), and task.Flow makes a Task of it.
// It is 21 lines, as the same steps with go-zookeeper's blocking calls
// are (FLOWS.md shows both); here a retry after connection loss waits for
// the reconnect instead of spinning, and the recipe runs under the
// simulation (fakezk/sim, scenario claim/3).
func claim(f *task.F, job string, owner []byte) (bool, error) {
	for {
		_, err := task.Await(f, task.Create(job, owner, task.Ephemeral))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, task.ErrNodeExists): // someone's, or ours after a lost reply
			d, err := task.Await(f, task.Get(job))
			if err == nil {
				return d.Stat.EphemeralOwner == f.Scope().Session().ID, nil
			}
			if !errors.Is(err, task.ErrNoNode) && !lost(err) {
				return false, err
			} // its owner has gone, or the read was lost: create again
		case lost(err):
			continue // outcome unknown: create again, and read if it exists
		default:
			return false, err
		}
	}
}

// claimTask is claim as a Task, to submit, retry or run under a deadline.
func claimTask(job string, owner []byte) task.Task[bool] {
	return task.Flow(func(f *task.F) (bool, error) { return claim(f, job, owner) })
}

// lost reports an error after which a request's outcome is unknown (or
// it was not sent): the request may be made again.
func lost(err error) bool {
	return errors.Is(err, task.ErrConnectionLoss) || errors.Is(err, task.ErrNotSent)
}

// Straight-line coordination code: the claim-a-job recipe as a flow. The
// server (deterministic mode) applies a's create, and a's connection
// drops before the reply: a sees connection loss, creates again, gets
// NodeExists and finds the node is its own. b finds it is not.
func ExampleFlow() {
	srv := fakezk.New(fakezk.Config{Deterministic: true})
	ca, cb := srv.Connect(fakezk.ConnConfig{}), srv.Connect(fakezk.ConnConfig{})
	a, _ := executor.New(executor.Config{Conn: ca})
	b, _ := executor.New(executor.Config{Conn: cb})
	defer a.Shutdown()
	defer b.Shutdown()
	settle := func() {
		for a.RunUntilIdle()+b.RunUntilIdle()+srv.RunUntilIdle() > 0 {
		}
	}
	settle()

	executor.Submit(a, claimTask("/job-1", []byte("a")), func(mine bool, err error) {
		fmt.Println("a claimed:", mine, err)
	})
	a.RunUntilIdle()   // the create is sent,
	srv.Drop(ca, true) // applied, and its reply lost
	settle()

	executor.Submit(b, claimTask("/job-1", []byte("b")), func(mine bool, err error) {
		fmt.Println("b claimed:", mine, err)
	})
	settle()
	// Output:
	// a claimed: true <nil>
	// b claimed: false <nil>
}

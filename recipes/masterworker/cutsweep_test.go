package masterworker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// Every write client 0 sends in one role, cut off with its reply lost
// (applied), the session back through a member that has not applied it,
// the call's deadline passing meanwhile (sim.CutSweep):
//
//   - submit: Submit of a task, then (its outcome unknown) Resubmit with
//     the same id, as the doc says;
//   - worker: a worker's Run (its assignment directory, its
//     registration, the status of a task the primary on client 1 gave
//     it, its give-up);
//   - master: a master's Run (the setup, its campaign, its moves, its
//     resign), alone or with client 1's master primary already.
//
// Then: client 0's live session leaves no node under the root; client
// 1's master and worker get every submitted task done; and each
// submission is one task, with one status.
func TestCutSweep(t *testing.T) {
	for _, role := range []string{"submit", "worker", "master", "master contended"} {
		t.Run(role, func(t *testing.T) {
			n := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return mwHistory(w, cut, role) }}.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

// The sweep catches a Find that lists without a sync: a Resubmit after a
// Submit whose reply was lost, back on the member that has not applied
// the create, does not find the task and submits it twice.
func TestCutSweepCatchesFindWithoutSync(t *testing.T) {
	defer canary.Enable("masterworker/find-without-sync")()
	err := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return mwHistory(w, cut, "submit") }}.Err()
	if err == nil {
		t.Fatal("with Find unsynced the sweep still passes")
	}
	t.Logf("with Find unsynced: %v", err)
}

func mwHistory(w *sim.World, cut *sim.Cutter, role string) error {
	const root = "/jobs"
	sys, err := masterworker.New(root)
	if err != nil {
		return err
	}
	echo := func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) }
	deadline := w.Timeout() / 6 // half the cut
	bound := 2 * time.Minute
	background := func(i int, t task.Task[task.Unit]) { sim.Submit(w, i, c.Timeout(t, time.Hour)) }
	m0, _ := sys.Master("m0")
	m1, _ := sys.Master("m1")
	w0, _ := sys.Worker("w0", echo)
	w1, _ := sys.Worker("w1", echo)
	ids := []string{"c1-pre"}
	if _, err := sim.Run(w, 1, sys.Submit("c1-pre", []byte("pre"))); err != nil {
		return fmt.Errorf("client 1's submit: %w", err)
	}
	master1, worker1 := false, false
	switch role {
	case "worker", "master contended":
		background(1, m1.Run())
		master1 = true
		if !w.Settle(m1.Primary) {
			return fmt.Errorf("client 1's master never primary")
		}
	}
	sess := w.Conns[0].SessionID()
	cut.Armed = true
	var what string
	switch role {
	case "submit":
		ids = append(ids, "c0-a")
		name, err := sim.Run(w, 0, c.Timeout(sys.Submit("c0-a", []byte("a")), deadline))
		what = fmt.Sprintf("submit: %q, %v", name, err)
		if err != nil {
			// The outcome unknown: submit again with the same id.
			name, err = sim.Run(w, 0, c.Timeout(sys.Resubmit("c0-a", []byte("a")), bound))
			what += fmt.Sprintf("; resubmit: %q, %v", name, err)
			if err != nil {
				return fmt.Errorf("%s", what)
			}
		}
	case "worker":
		_, err := sim.Run(w, 0, c.Timeout(w0.Run(), deadline))
		what = fmt.Sprintf("worker: %v", err)
	default:
		_, err := sim.Run(w, 0, c.Timeout(m0.Run(), deadline))
		what = fmt.Sprintf("master: %v", err)
	}
	if !cut.Cut {
		return nil
	}
	if w.Conns[0].SessionID() != sess {
		return fmt.Errorf("%s: client 0's session ended: the history missed its schedule", what)
	}
	end := w.Clock.Now().Add(bound)
	left := func() []string { return w.Ephemerals(root, sess) }
	w.Settle(func() bool { return len(left()) == 0 || !w.Clock.Now().Before(end) })
	if l := left(); len(l) > 0 {
		return fmt.Errorf("%s: client 0 left %v of its live session for %s", what, l, bound)
	}
	if !master1 {
		background(1, m1.Run())
	}
	if !worker1 {
		background(1, w1.Run())
	}
	ids = append(ids, "c1-post")
	name, err := sim.Run(w, 1, sys.Submit("c1-post", []byte("post")))
	if err != nil {
		return fmt.Errorf("%s: client 1's submit after: %w", what, err)
	}
	if _, err := sim.Run(w, 1, c.Timeout(sys.Wait(name), bound)); err != nil {
		return fmt.Errorf("%s: client 1's task after never done: %w", what, err)
	}
	// Every submission is one task, done once.
	for _, id := range ids {
		prefix := "task-" + id + "-"
		var tasks, statuses []string
		for _, n := range w.Children(sys.TasksPath()) {
			if strings.HasPrefix(n, prefix) {
				tasks = append(tasks, n)
			}
		}
		for _, a := range w.Children(sys.AssignRoot()) {
			for _, n := range w.Children(sys.AssignPath(a)) {
				if strings.HasPrefix(n, prefix) {
					tasks = append(tasks, a+"/"+n)
				}
			}
		}
		end := w.Clock.Now().Add(bound)
		w.Settle(func() bool {
			statuses = statuses[:0]
			for _, n := range w.Children(sys.StatusRoot()) {
				if strings.HasPrefix(n, prefix) {
					statuses = append(statuses, n)
				}
			}
			return len(statuses) > 0 || !w.Clock.Now().Before(end)
		})
		if len(statuses) != 1 || len(tasks) > 0 {
			return fmt.Errorf("%s: submission %s: statuses %v, tasks still queued or assigned %v: want one status", what, id, statuses, tasks)
		}
	}
	return nil
}

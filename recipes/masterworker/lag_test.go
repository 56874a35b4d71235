package masterworker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// A process that takes over a submission (Resubmit after a restart) on a
// member that lags behind the leader finds the task the process before it
// submitted: Find syncs before it lists, and nothing is submitted twice.
// The simulation found it (masterworker seed 277973293976963: a submitter
// restarted onto a member that had not applied its predecessor's create).
func TestResubmitOnLaggingMemberFindsTheTask(t *testing.T) {
	if err := resubmitOnLaggingMember(t); err != nil {
		t.Fatal(err)
	}
	// The test reaches the stale listing: without the sync, it fails.
	restore := canary.Enable(masterworker.BugFindWithoutSync)
	defer restore()
	if err := resubmitOnLaggingMember(t); err == nil {
		t.Fatal("with Find's sync off the test still passes")
	} else {
		t.Logf("with Find's sync off: %v", err)
	}
}

func resubmitOnLaggingMember(t *testing.T) error {
	w := newWorld(t, 2, nil)
	w.Server.KeepHistory()
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Exists(sys.TasksPath())); err != nil {
		t.Fatal(err) // client 1 has heard of the setup, and no more
	}
	name, err := sim.Run(w, 0, sys.Submit("p1_1", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	// Client 1, the restarted submitter: its member has not applied the
	// task's create.
	w.Server.LagHeld(w.Conns[1], 10*time.Second)
	again, err := sim.Run(w, 1, sys.Resubmit("p1_1", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, n := range w.Children("/mw/tasks") {
		if strings.HasPrefix(n, "task-p1_1-") {
			tasks = append(tasks, n)
		}
	}
	if again != name || len(tasks) != 1 {
		return fmt.Errorf("submitted %q, Resubmit on the lagging member gave %q; /tasks holds %v", name, again, tasks)
	}
	return nil
}

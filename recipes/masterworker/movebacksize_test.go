package masterworker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// WithACL's provider gives each path its ACL, and it may give a task in
// /tasks a longer one than its assignment (here world:anyone with a
// hundred digest entries more). The move of a dead worker's task back to
// /tasks then carries the longer ACL, with the task's data: a task whose
// assignment fit can be too large to move back (ErrDataTooLarge, refused
// before it is sent, on every try). The package doc: once the faults
// stop and a primary and a worker are up, every task gets its status.
// Before, the refused move ended the primary's term and its Run, and
// every master's after it, and the task stayed in the dead worker's
// directory with no status; now it ends with a failed status that says
// so, as an assignment too large to send does.
func TestMoveBackOverTheLimitFailsItsTask(t *testing.T) {
	w := newWorld(t, 4, nil)
	extra := []task.ACL{{Perms: task.PermAll, Scheme: "world", ID: "anyone"}}
	for i := range 100 {
		extra = append(extra, task.ACL{Perms: task.PermRead, Scheme: "digest", ID: fmt.Sprintf("u%03d:AAAAAAAAAAAAAAAAAAAAAAAAAAA=", i)})
	}
	acl := task.ACLProvider(func(p string) []task.ACL {
		if strings.HasPrefix(p, "/mw/tasks/") {
			return extra
		}
		return nil
	})
	sys, err := masterworker.New("/mw", masterworker.WithACL(acl))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := sys.Master("m")
	stuck, _ := sys.Worker("w1", func(masterworker.Job) task.Task[[]byte] {
		return func(*task.Scope, task.Cont[[]byte]) {} // holds its task until its session ends
	})
	mo := sim.Submit(w, 0, m.Run())
	sim.Submit(w, 1, stuck.Run())
	if !w.Settle(func() bool { return m.Primary() && stuck.Registered() }) {
		t.Fatal("no primary or no worker")
	}
	// The largest data Submit takes: its assignment (the short ACL) fits,
	// its move back (the long one, a longer path, a check and a delete)
	// does not.
	prefix := sys.TasksPath() + "/task-c_1-"
	room := w.Conns[2].PacketRoom(&task.CreateRequest{Path: prefix, Mode: task.PersistentSequential, ACL: acl.For(prefix)})
	name, err := sim.Run(w, 2, sys.Submit("c_1", make([]byte, room)))
	if err != nil {
		t.Fatalf("Submit of %d bytes: %v", room, err)
	}
	if !w.Settle(func() bool { return len(w.Children(sys.AssignPath("w1"))) == 1 }) {
		t.Fatal("the task was never assigned to w1")
	}
	w.Server.Expire(w.Conns[1]) // w1 dies holding the task: the primary moves it back
	good, _ := sys.Worker("w2", func(j masterworker.Job) task.Task[[]byte] { return task.Value([]byte("ok")) })
	wo := sim.Submit(w, 3, good.Run())
	res, err := sim.Run(w, 2, c.Deadline(sys.Wait(name), w.Clock.Now().Add(time.Minute)))
	if err != nil {
		t.Errorf("Wait(%s): %v; want a status (in /assign/w1: %v; master ended %v: %v)", name, err, w.Children(sys.AssignPath("w1")), mo.Done, mo.Err)
	} else if !res.Failed || !strings.Contains(string(res.Data), "over the server's") {
		t.Errorf("Wait(%s) = failed %v, %.200q; want a failed status saying the task is over the limit", name, res.Failed, res.Data)
	}
	if mo.Done || wo.Done {
		t.Errorf("the master (%+v) or w2 (%+v) ended", mo.Err, wo.Err)
	}
}

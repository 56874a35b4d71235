package masterworker_test

import (
	"errors"
	"strings"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// Every node the system creates carries the ACL its WithACL provider gives
// for the node's path: the root, its ancestors and directories, the master
// node and lease, a worker's assignment directory and registration, a
// task, its assignment, the task moved back when its worker's session
// expired holding it, and its status; and, with the option left out, none
// does (acltest.Check).
func TestACL(t *testing.T) {
	want := []string{"/acl", "/acl/mw", "/acl/mw/workers", "/acl/mw/tasks", "/acl/mw/assign", "/acl/mw/status",
		"/acl/mw/master", "/acl/mw/master.leases/*", "/acl/mw/assign/w1", "/acl/mw/workers/w1", "/acl/mw/assign/w2",
		"/acl/mw/workers/w2", "/acl/mw/tasks/task-c_1-*", "/acl/mw/assign/w1/task-c_1-*", "/acl/mw/assign/w2/task-c_1-*",
		"/acl/mw/status/task-c_1-*"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 4, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		sys, err := masterworker.New("/acl/mw", masterworker.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		m, _ := sys.Master("m")
		stuck, _ := sys.Worker("w1", func(masterworker.Job) task.Task[[]byte] {
			return func(*task.Scope, task.Cont[[]byte]) {} // holds its task until its session ends
		})
		sim.Submit(w, 0, m.Run())
		sim.Submit(w, 1, stuck.Run())
		w.Drive()
		if !m.Primary() || !stuck.Registered() {
			t.Fatalf("primary %v, registered %v", m.Primary(), stuck.Registered())
		}
		res := sim.Submit(w, 2, c.Then(sys.Submit("c_1", []byte("x")), sys.Wait))
		if !w.Settle(func() bool { return len(w.Children("/acl/mw/assign/w1")) == 1 }) {
			t.Fatal("task not assigned to w1")
		}
		w.Server.Expire(w.Conns[1]) // w1 dies holding the task: the master moves it back
		if !w.Settle(func() bool { return len(w.Children("/acl/mw/tasks")) == 1 }) {
			t.Fatal("task not moved back")
		}
		good, _ := sys.Worker("w2", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
		sim.Submit(w, 3, good.Run())
		if !w.Settle(func() bool { return res.Done }) || res.Err != nil || string(res.V.Data) != "x" {
			t.Fatalf("result %+v", res)
		}
		moved := false
		for _, cr := range creates() {
			moved = moved || cr.InMulti && strings.HasPrefix(cr.Path, "/acl/mw/tasks/")
		}
		if !moved {
			t.Fatal("no multi created the task back in /tasks")
		}
		return creates()
	})
}

// The primary follows /workers with a cache, which ends on an error no
// retry settles: an operator closes /workers, a worker dies, and the
// cache's listing is refused. The master used to go on with a
// snapshot of the workers nothing updated any more: a worker that died
// after that kept its tasks, and a new one got none. Now the term ends
// with the cache's error: Run gives the mastership up and fails with
// task.ErrNoAuth, so the process can run a master again (as the
// simulation's does) and a backup takes over.
func TestWorkersCacheRefusedEndsTheTerm(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, RecheckWatches: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sys, err := masterworker.New("/mw")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := sys.Master("m")
	run := sim.Submit(w, 0, m.Run())
	w1, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	sim.Submit(w, 1, w1.Run())
	w.Drive()
	if !m.Primary() || !w1.Registered() {
		t.Fatalf("primary %v, registered %v", m.Primary(), w1.Registered())
	}
	if err := w.Server.AdminSetACL("/mw/workers", []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}); err != nil {
		t.Fatal(err)
	}
	// w1 dies: /workers changes, and the cache's listing, once its watch
	// reads the directory again, is refused.
	w.Server.Expire(w.Conns[1])
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return run.Done || !w.Clock.Now().Before(until) })
	if !run.Done || !errors.Is(run.Err, task.ErrNoAuth) {
		t.Fatalf("the master whose workers' cache was refused: done=%v err=%v, want Run to end with ErrNoAuth", run.Done, run.Err)
	}
	if m.Primary() {
		t.Fatal("the master still says it is primary")
	}
	if n := len(w.Children("/mw/master.leases")); n != 0 {
		t.Fatalf("%d leases left: the mastership was not given up", n)
	}
}

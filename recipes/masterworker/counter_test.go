package masterworker_test

import (
	"math"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// An operator deletes the empty tasks directory while a master is
// primary (the simulation's empty-dir class). The primary's watch on
// /tasks fires; the master makes the directory again and goes on
// serving, and a task submitted afterwards gets its status.
func TestMasterMakesTasksDirAgain(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	mo := sim.Submit(w, 0, m.Run())
	wo := sim.Submit(w, 1, wk.Run())
	w.Drive()
	if !m.Primary() || !wk.Registered() {
		t.Fatalf("primary %v, registered %v", m.Primary(), wk.Registered())
	}
	if err := w.Server.AdminDelete(sys.TasksPath()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if mo.Done {
		t.Fatalf("the master ended when the empty tasks directory was deleted: %v", mo.Err)
	}
	if _, ok := w.Server.NodeStat(sys.TasksPath()); !ok {
		t.Fatalf("the primary did not make %s again", sys.TasksPath())
	}
	o := &sim.Outcome[masterworker.Result]{}
	executor.SubmitWith(w.Execs[2], c.Then(sys.Submit("c_after", []byte("c_after")), sys.Wait),
		executor.Options{Deadline: w.Clock.Now().Add(time.Minute)},
		func(r masterworker.Result, err error) { o.V, o.Err, o.Done = r, err, true })
	w.Settle(func() bool { return o.Done })
	if !o.Done || o.Err != nil || string(o.V.Data) != "c_after" {
		t.Fatalf("task after the tasks directory came back: %+v", o)
	}
	if mo.Done || wo.Done {
		t.Fatalf("master or worker ended: %+v %+v", mo, wo)
	}
}

// A submission whose reply was lost is looked for (Find, Resubmit) after
// the master assigned it and an operator deleted the then empty tasks
// directory. The task is found where it is: it is not submitted a second
// time, though the directory's counter, started again, would give the
// new task the very same name.
func TestFindAfterTasksDirDeleted(t *testing.T) {
	w := newWorld(t, 1, nil)
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	name, err := sim.Run(w, 0, sys.Submit("a", []byte("a")))
	if err != nil {
		t.Fatal(err)
	}
	// What a primary does, by hand: the task moves to worker w1.
	assigned := sys.AssignPath("w1") + "/" + name
	for _, p := range []string{sys.AssignPath("w1"), assigned} {
		if err := w.Server.AdminCreate(p, []byte("a"), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{sys.TasksPath() + "/" + name, sys.TasksPath()} {
		if err := w.Server.AdminDelete(p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sim.Run(w, 0, sys.Find("a"))
	if err != nil || got != name {
		t.Fatalf("Find = %q, %v; want %q (assigned to w1)", got, err, name)
	}
	got, err = sim.Run(w, 0, sys.Resubmit("a", []byte("a")))
	if err != nil || got != name {
		t.Fatalf("Resubmit = %q, %v; want %q (assigned to w1)", got, err, name)
	}
	if left := w.Children(sys.TasksPath()); len(left) > 0 {
		t.Fatalf("submitted a second time: %v in /tasks while %s is assigned", left, assigned)
	}
}

// With the tasks directory's counter exhausted (every name ends in
// 2147483647), names stay unique by their submission ids: submissions
// go on, each task gets its own status, and a lost reply is still found
// by its id.
func TestSubmitAtCounterWrap(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.SetCounters(w.ServerPath(sys.TasksPath()), 0, math.MaxInt32-1); err != nil {
		t.Fatal(err)
	}
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	mo := sim.Submit(w, 0, m.Run())
	wo := sim.Submit(w, 1, wk.Run())
	names := map[string]bool{}
	for _, id := range []string{"a", "b", "c", "d"} {
		res, err := sim.Run(w, 2, c.Then(sys.Submit(id, []byte(id)), func(name string) task.Task[masterworker.Result] {
			names[name] = true
			return sys.Wait(name)
		}))
		if err != nil || string(res.Data) != id {
			t.Fatalf("submission %s: %+v, %v", id, res, err)
		}
	}
	if len(names) != 4 {
		t.Fatalf("task names %v: want 4 distinct", names)
	}
	if got, err := sim.Run(w, 2, sys.Find("c")); err != nil || got != "task-c-2147483647" {
		t.Fatalf("Find(c) = %q, %v", got, err)
	}
	if mo.Done || wo.Done {
		t.Fatalf("master or worker ended: %+v %+v", mo, wo)
	}
}

// With the tasks directory's counter exhausted, ZooKeeper no longer moves
// the directory's pzxid when a child is created, so a child watch whose
// notification was lost with the connection is not fired again on
// reconnect (SetWatches compares the pzxid). The primary reads /tasks
// again after every reconnect: a task submitted while it was cut off is
// still assigned.
func TestMasterRereadsTasksAfterReconnectAtCounterWrap(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.SetCounters(w.ServerPath(sys.TasksPath()), 0, math.MaxInt32-1); err != nil {
		t.Fatal(err)
	}
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	mo := sim.Submit(w, 0, m.Run())
	wo := sim.Submit(w, 1, wk.Run())
	w.Drive()
	// Two tasks: the counter reaches its maximum.
	for _, id := range []string{"a", "b"} {
		if res, err := sim.Run(w, 2, c.Then(sys.Submit(id, []byte(id)), sys.Wait)); err != nil || string(res.Data) != id {
			t.Fatalf("submission %s: %+v, %v", id, res, err)
		}
	}
	w.Server.Partition(w.Conns[0], 100*time.Millisecond, false)
	name, err := sim.Run(w, 2, sys.Submit("c", []byte("c")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(w, 2, sys.Wait(name))
	if err != nil || string(res.Data) != "c" {
		t.Fatalf("task %s submitted while the primary was cut off: %+v, %v (left in /tasks: %v)", name, res, err, w.Children(sys.TasksPath()))
	}
	if mo.Done || wo.Done {
		t.Fatalf("master or worker ended: %+v %+v", mo, wo)
	}
}

// hookConn runs hook (once) just before the first request for which
// match is true is sent.
type hookConn struct {
	*fakezk.Conn
	match func(task.Request) bool
	hook  func()
	fired bool
}

func (h *hookConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if !h.fired && h.match != nil && h.match(req) {
		h.fired = true
		h.hook()
	}
	h.Conn.Do(req, done, watch)
}

// Find while a dead worker's task moves back to /tasks behind its reads,
// with the tasks directory's counter run out: the move's create does not
// change /tasks's pzxid then, so Find cannot rely on it to see that the
// directory changed; it reads /tasks again at the end. The task is found,
// and Resubmit does not submit it a second time.
func TestFindTaskMovedBackAtCounterWrap(t *testing.T) {
	var h *hookConn
	w := newWorld(t, 1, func(i int, conn *fakezk.Conn) task.Conn {
		h = &hookConn{Conn: conn}
		return h
	})
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.SetCounters(w.ServerPath(sys.TasksPath()), 0, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	name := "task-a-2147483647"
	// The task sits with dead worker w2; w1 is another worker, read first.
	for _, p := range []string{sys.AssignPath("w1"), sys.AssignPath("w2"), sys.AssignPath("w2") + "/" + name} {
		if err := w.Server.AdminCreate(p, []byte("a"), 0); err != nil {
			t.Fatal(err)
		}
	}
	// A primary moves it back to /tasks while Find reads w1.
	h.match = func(req task.Request) bool {
		r, ok := req.(*task.GetChildrenRequest)
		return ok && r.Path == sys.AssignPath("w1")
	}
	h.hook = func() {
		if err := w.Server.AdminDelete(sys.AssignPath("w2") + "/" + name); err != nil {
			t.Error(err)
		}
		if err := w.Server.AdminCreate(sys.TasksPath()+"/"+name, []byte("a"), 0); err != nil {
			t.Error(err)
		}
	}
	got, err := sim.Run(w, 0, sys.Resubmit("a", []byte("a")))
	if !h.fired {
		t.Fatal("the task was not moved during Find: the test checks nothing")
	}
	if err != nil || got != name {
		t.Fatalf("Resubmit = %q, %v; want %q (moved back to /tasks)", got, err, name)
	}
	if left := w.Children(sys.TasksPath()); len(left) != 1 {
		t.Fatalf("/tasks holds %v: submitted a second time", left)
	}
}

// The same for a worker: with its assignment directory's counter run out
// (each assignment and each status multi counts), a task assigned while
// the worker was cut off is still run once it is back.
func TestWorkerRelistsAfterReconnectAtCounterWrap(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate(sys.AssignPath("w1"), nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.SetCounters(w.ServerPath(sys.AssignPath("w1")), 0, math.MaxInt32-2); err != nil {
		t.Fatal(err)
	}
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	mo := sim.Submit(w, 0, m.Run())
	wo := sim.Submit(w, 1, wk.Run())
	w.Drive()
	for _, id := range []string{"a", "b"} {
		if res, err := sim.Run(w, 2, c.Then(sys.Submit(id, []byte(id)), sys.Wait)); err != nil || string(res.Data) != id {
			t.Fatalf("submission %s: %+v, %v", id, res, err)
		}
	}
	w.Server.Partition(w.Conns[1], 100*time.Millisecond, false)
	name, err := sim.Run(w, 2, sys.Submit("c", []byte("c")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(w, 2, sys.Wait(name))
	if err != nil || string(res.Data) != "c" {
		t.Fatalf("task %s assigned while the worker was cut off: %+v, %v (left with w1: %v)", name, res, err, w.Children(sys.AssignPath("w1")))
	}
	if mo.Done || wo.Done {
		t.Fatalf("master or worker ended: %+v %+v", mo, wo)
	}
}

// A dead worker's empty assignment directory is deleted (an operator
// cleaning up) between the primary's list of /assign and its list of
// that directory: nothing is left to move back, and the primary goes on.
func TestMasterDeadWorkerDirGone(t *testing.T) {
	var h *hookConn
	w := newWorld(t, 1, func(i int, conn *fakezk.Conn) task.Conn {
		h = &hookConn{Conn: conn}
		return h
	})
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	dead := sys.AssignPath("w2")
	if err := w.Server.AdminCreate(dead, nil, 0); err != nil {
		t.Fatal(err)
	}
	h.match = func(req task.Request) bool {
		r, ok := req.(*task.GetChildrenRequest)
		return ok && r.Path == dead
	}
	h.hook = func() {
		if err := w.Server.AdminDelete(dead); err != nil {
			t.Error(err)
		}
	}
	m, _ := sys.Master("m")
	mo := sim.Submit(w, 0, m.Run())
	w.Drive()
	if !h.fired {
		t.Fatal("the directory was not deleted under the primary: the test checks nothing")
	}
	if mo.Done || !m.Primary() {
		t.Fatalf("the master ended (primary %v): %+v", m.Primary(), mo)
	}
}

package masterworker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

func newSys(t *testing.T, root string) *masterworker.System {
	t.Helper()
	sys, err := masterworker.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

func newWorld(t *testing.T, clients int, wrap func(int, *fakezk.Conn) task.Conn) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1, Clients: clients, Wrap: wrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// Bad input gets a typed error at once, never a panic or a hang.
func TestBadInput(t *testing.T) {
	for _, root := range []string{"", "rel", "/a/", "/a//b", "/a/\x01"} {
		if _, err := masterworker.New(root); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q): %v", root, err)
		}
	}
	sys := newSys(t, "/mw")
	echo := func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) }
	for _, id := range []string{"", "a/b", "..", "."} {
		if _, err := sys.Master(id); err == nil {
			t.Errorf("Master(%q) accepted", id)
		}
		if _, err := sys.Worker(id, echo); err == nil {
			t.Errorf("Worker(%q) accepted", id)
		}
	}
	if _, err := sys.Master("a/b"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Master(a/b): %v", err)
	}
	if _, err := sys.Worker("w", nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil handler: %v", err)
	}
	if _, err := sys.NewClient(nil, "c"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil executor: %v", err)
	}
	m, _ := sys.Master("m")
	if err := m.Serve(context.Background(), nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Serve(nil): %v", err)
	}
	wk, _ := sys.Worker("w", echo)
	if err := wk.Serve(context.Background(), nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("worker Serve(nil): %v", err)
	}

	w := newWorld(t, 1, nil)
	if _, err := sim.Run(w, 0, sys.Submit("", nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Submit with an empty id: %v", err)
	}
	if _, err := sim.Run(w, 0, sys.Submit("a/b", nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Submit with a slash in the id: %v", err)
	}
	if _, err := sim.Run(w, 0, sys.Submit("big", make([]byte, task.MaxDataSize+1))); !errors.Is(err, task.ErrDataTooLarge) {
		t.Errorf("Submit of too much data: %v", err)
	}
	if _, err := sim.Run(w, 0, sys.Wait("")); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Wait(\"\"): %v", err)
	}
	if _, err := sim.Run(w, 0, sys.Find("x/y")); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Find(x/y): %v", err)
	}
	if _, err := sim.Run(w, 0, sys.Status("")); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Status(\"\"): %v", err)
	}
}

// A status not in the recipe's format is reported as ErrBadStatus, not
// taken for a result.
func TestBadStatus(t *testing.T) {
	w := newWorld(t, 1, nil)
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, task.Create(sys.StatusPath("task-x-0000000001"), []byte("?"), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, sys.Wait("task-x-0000000001")); !errors.Is(err, masterworker.ErrBadStatus) {
		t.Errorf("Wait: %v", err)
	}
	if _, err := sim.Run(w, 0, sys.Status("task-x-0000000001")); !errors.Is(err, masterworker.ErrBadStatus) {
		t.Errorf("Status: %v", err)
	}
}

// dropFirst drops client 0's connection right after its first create
// under dir, applying it first: the client sees connection loss for a
// create that happened.
type dropFirst struct {
	*fakezk.Conn
	srv     *fakezk.Server
	prefix  string
	dropped bool
	// unapplied: the connection breaks before the server applies the
	// create (else after: its reply is lost).
	unapplied bool
}

func (d *dropFirst) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	d.Conn.Do(req, done, watch)
	if cr, ok := req.(*task.CreateRequest); ok && !d.dropped && strings.HasPrefix(cr.Path, d.prefix) {
		d.dropped = true
		d.srv.Drop(d.Conn, !d.unapplied)
	}
}

// A submission whose reply is lost after the server applied it is found
// by its id, not created twice.
func TestSubmitLostReplyFound(t *testing.T) {
	var d *dropFirst
	w := newWorld(t, 1, func(i int, conn *fakezk.Conn) task.Conn {
		d = &dropFirst{Conn: conn, prefix: "/mw/tasks/"}
		return d
	})
	d.srv = w.Server
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	name, err := sim.Run(w, 0, sys.Submit("c1_1", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if !d.dropped {
		t.Fatal("the create's reply was not lost: the test checks nothing")
	}
	if got := w.Children("/mw/tasks"); len(got) != 1 || got[0] != name || !strings.HasPrefix(name, "task-c1_1-") {
		t.Fatalf("submitted %q, /tasks holds %v", name, got)
	}
	// Resubmit with the same id finds it too, wherever it is.
	again, err := sim.Run(w, 0, sys.Resubmit("c1_1", []byte("x")))
	if err != nil || again != name || len(w.Children("/mw/tasks")) != 1 {
		t.Fatalf("Resubmit: %q %v, /tasks %v", again, err, w.Children("/mw/tasks"))
	}
	// Find follows the task into an assignment directory and into /status.
	if _, err := sim.Run(w, 0, task.Multi(
		&task.CreateRequest{Path: sys.AssignPath("w"), Mode: task.Persistent, ACL: task.OpenACL},
		&task.CreateRequest{Path: sys.AssignPath("w") + "/" + name, Mode: task.Persistent, ACL: task.OpenACL},
		&task.DeleteRequest{Path: sys.TasksPath() + "/" + name, Version: -1})); err != nil {
		t.Fatal(err)
	}
	if got, err := sim.Run(w, 0, sys.Find("c1_1")); err != nil || got != name {
		t.Fatalf("Find in /assign: %q %v", got, err)
	}
	if got, err := sim.Run(w, 0, sys.Find("c1_2")); err != nil || got != "" {
		t.Fatalf("Find of an id never submitted: %q %v", got, err)
	}
}

// Wait returns at once for a status already written, and otherwise when
// it is written.
func TestWaitStatusAlreadyThere(t *testing.T) {
	w := newWorld(t, 2, nil)
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, task.Create(sys.StatusPath("task-a-0000000001"), []byte("odone"), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(w, 0, sys.Wait("task-a-0000000001"))
	if err != nil || string(res.Data) != "done" || res.Failed {
		t.Fatalf("Wait on a written status: %+v %v", res, err)
	}
	o := sim.Submit(w, 1, sys.Wait("task-b-0000000002"))
	w.Drive()
	if o.Done {
		t.Fatalf("Wait returned before the status was written: %+v", o)
	}
	if _, err := sim.Run(w, 0, task.Create(sys.StatusPath("task-b-0000000002"), []byte("elater"), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !o.Done || o.Err != nil || !o.V.Failed || !errors.Is(o.V.Err(), masterworker.ErrTaskFailed) || !strings.Contains(o.V.Err().Error(), "later") {
		t.Fatalf("Wait after the write: %+v", o)
	}
}

// A master, a worker and a client on one fake server: a task goes
// through, a handler error becomes a failed status, and a second worker
// with the id of a live one waits for the first to go.
func TestEndToEnd(t *testing.T) {
	w := newWorld(t, 4, nil)
	sys := newSys(t, "/app/mw")
	m, _ := sys.Master("m")
	handler := func(j masterworker.Job) task.Task[[]byte] {
		if string(j.Data) == "bad" {
			return task.Fail[[]byte](errors.New("no good"))
		}
		return task.Value([]byte(strings.ToUpper(string(j.Data))))
	}
	wk, _ := sys.Worker("w1", handler)
	mo := sim.Submit(w, 0, m.Run())
	wo := sim.Submit(w, 1, wk.Run())
	w.Drive()
	if !m.Primary() || !wk.Registered() {
		t.Fatalf("primary %v, registered %v", m.Primary(), wk.Registered())
	}
	run := func(id, data string) masterworker.Result {
		t.Helper()
		res, err := sim.Run(w, 2, c.Then(sys.Submit(id, []byte(data)), sys.Wait))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return res
	}
	if res := run("c_1", "hello"); string(res.Data) != "HELLO" || res.Err() != nil {
		t.Fatalf("result %+v", res)
	}
	if res := run("c_2", "bad"); !res.Failed || !errors.Is(res.Err(), masterworker.ErrTaskFailed) || string(res.Data) != "no good" {
		t.Fatalf("failed handler: %+v", res)
	}
	if _, assigned, _ := m.Stats(); assigned != 2 || wk.Completed() != 2 {
		t.Fatalf("assigned %d, completed %d", assigned, wk.Completed())
	}
	twin, _ := sys.Worker("w1", handler)
	to := sim.Submit(w, 3, twin.Run())
	w.Drive()
	if twin.Registered() || to.Done {
		t.Fatalf("a second worker w1 registered while the first lives: %+v", to)
	}
	w.Server.Expire(w.Conns[1])
	w.Settle(func() bool { return twin.Registered() })
	if !twin.Registered() || !wo.Done || !errors.Is(wo.Err, task.ErrSessionExpired) {
		t.Fatalf("after the first w1's expiry: twin registered %v, first ended %v %v", twin.Registered(), wo.Done, wo.Err)
	}
	if res := run("c_3", "again"); string(res.Data) != "AGAIN" {
		t.Fatalf("result %+v", res)
	}
	if mo.Done {
		t.Fatalf("master ended: %v", mo.Err)
	}
}

// With the server down, the blocking calls end at the caller's deadline
// with a typed error (matching context.DeadlineExceeded); they do not
// hang, and nothing is left running.
func TestServerDownDeadline(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	defer func() { stop(); <-done }()
	sys := newSys(t, "/mw")
	cl, err := sys.NewClient(ex, "c")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := sys.Master("m")
	srv.Restart(time.Hour) // down until the (simulated, unmoving) clock passes an hour: for good
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 200*time.Millisecond) }
	c1, cancel1 := short()
	defer cancel1()
	if _, err := cl.Submit(c1, []byte("x")); !errors.Is(err, task.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Submit with the server down: %v", err)
	}
	c2, cancel2 := short()
	defer cancel2()
	if err := m.Serve(c2, ex); !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Errorf("Serve with the server down: %v", err)
	}
	c3, cancel3 := short()
	defer cancel3()
	if _, err := cl.Wait(c3, "task-c_1-0000000000"); !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Errorf("Wait with the server down: %v", err)
	}
}

package zkops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

func TestNewID(t *testing.T) {
	if got, want := zkops.NewID(0x0123456789abcdef, 0xfedcba9876543210), "01234567-89ab-cdef-fedc-ba9876543210"; got != want {
		t.Errorf("NewID = %s, want %s", got, want)
	}
}

func TestWatchNode(t *testing.T) {
	w := world(t, 1, nil)
	mk := func(p string) {
		if _, err := sim.Run(w, 0, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	watch := func(p string, ok func(*task.Stat) bool) *sim.Outcome[task.Unit] {
		o := sim.Submit(w, 0, zkops.WatchNode(p, 0, ok))
		w.Drive()
		if o.Done {
			t.Fatalf("WatchNode(%s) ended at once: %v", p, o.Err)
		}
		return o
	}
	wait := func(o *sim.Outcome[task.Unit], want string) {
		t.Helper()
		if !w.Settle(func() bool { return o.Done }) {
			t.Fatal("WatchNode never ended")
		}
		if o.Err == nil || !strings.Contains(o.Err.Error(), want) {
			t.Errorf("WatchNode = %v, want an error with %q", o.Err, want)
		}
	}

	mk("/d")
	o := watch("/d", nil)
	if _, err := sim.Run(w, 0, task.Delete("/d", task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	wait(o, "node /d deleted")

	mk("/v")
	o = watch("/v", nil)
	if _, err := sim.Run(w, 0, task.Set("/v", []byte("x"), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	wait(o, "node /v changed by someone else")

	// A child created under the node is no change of it: still watching.
	wait(sim.Submit(w, 0, zkops.WatchNode("/d2", 0, nil)), "node /d2 deleted") // missing at the start
	mk("/c")
	o = watch("/c", nil)
	mk("/c/x")
	if o.Done {
		t.Fatalf("WatchNode ended on a child's create: %v", o.Err)
	}
	// ok refusing the stat is a lost node.
	wait(sim.Submit(w, 0, zkops.WatchNode("/c/x", 0, func(*task.Stat) bool { return false })), "node /c/x deleted")
}

func TestFenced(t *testing.T) {
	w := world(t, 1, nil)
	if _, err := sim.Run(w, 0, task.Create("/f", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	var causes []error
	lost := func(cause, err error) error {
		causes = append(causes, cause)
		return errors.Join(errors.New("lost"), err)
	}

	rs, err := sim.Run(w, 0, zkops.Fenced("/f", 0, []task.MultiOp{&task.CreateRequest{Path: "/f/a"}}, lost))
	if err != nil || len(rs) != 1 {
		t.Fatalf("Fenced = %v, %v; want one result", rs, err)
	}
	// A failing op: its index counts within ops.
	_, err = sim.Run(w, 0, zkops.Fenced("/f", 0, []task.MultiOp{&task.CreateRequest{Path: "/f/b"}, &task.CreateRequest{Path: "/f/a"}}, lost))
	var oe *task.OpError
	var me *task.MultiError
	if !errors.As(err, &oe) || oe.Path != "/f/a" || !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, task.ErrNodeExists) {
		t.Errorf("Fenced with a failing op = %v; want an OpError on /f/a at index 1", err)
	}
	if len(causes) != 0 {
		t.Errorf("lost called on an op's failure: %v", causes)
	}
	// The node written by someone else: the check fails, nothing applied.
	if _, err := sim.Run(w, 0, task.Set("/f", nil, task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	_, err = sim.Run(w, 0, zkops.Fenced("/f", 0, []task.MultiOp{&task.CreateRequest{Path: "/f/c"}}, lost))
	if err == nil || !strings.HasPrefix(err.Error(), "lost") || len(causes) != 1 || !errors.Is(causes[0], task.ErrBadVersion) {
		t.Errorf("Fenced after a write = %v, causes %v; want lost with ErrBadVersion", err, causes)
	}
	if exists(t, w, "/f/c") || exists(t, w, "/f/b") {
		t.Error("a refused multi applied its ops")
	}
}

// With no ops, Fenced is the check alone: no results while the node is at
// the version, lost once it is not.
func TestFencedNoOps(t *testing.T) {
	w := world(t, 1, nil)
	if _, err := sim.Run(w, 0, task.Create("/f", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	errLost := errors.New("lost")
	lost := func(error, error) error { return errLost }
	if rs, err := sim.Run(w, 0, zkops.Fenced("/f", 0, nil, lost)); err != nil || len(rs) != 0 {
		t.Fatalf("Fenced with no ops = %v, %v; want no results", rs, err)
	}
	if _, err := sim.Run(w, 0, zkops.Fenced("/f", 1, nil, lost)); !errors.Is(err, errLost) {
		t.Fatalf("Fenced at another version = %v, want lost", err)
	}
}

// A create among a fenced multi's ops keeps the ACL it names (only a nil
// ACL becomes task.OpenACL), next to ops that are not creates.
func TestFencedKeepsCreateACL(t *testing.T) {
	w := world(t, 1, nil)
	if _, err := sim.Run(w, 0, task.Create("/f", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	noRead := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
	ops := []task.MultiOp{
		&task.SetDataRequest{Path: "/f", Data: []byte("v"), Version: task.AnyVersion},
		&task.CreateRequest{Path: "/f/open"},
		&task.CreateRequest{Path: "/f/closed", ACL: noRead},
	}
	rs, err := sim.Run(w, 0, zkops.Fenced("/f", 0, ops, func(_, err error) error { return err }))
	if err != nil || len(rs) != 3 {
		t.Fatalf("Fenced = %v, %v; want three results", rs, err)
	}
	if _, err := sim.Run(w, 0, task.Get("/f/open")); err != nil {
		t.Errorf("reading the node created with a nil ACL: %v", err)
	}
	if _, err := sim.Run(w, 0, task.Get("/f/closed")); !errors.Is(err, task.ErrNoAuth) {
		t.Errorf("reading the node created without read permission = %v, want ErrNoAuth", err)
	}
	if d, err := sim.Run(w, 0, task.Get("/f")); err != nil || string(d.Data) != "v" {
		t.Errorf("/f = %q, %v; want the data the multi set", d.Data, err)
	}
}

func TestDetached(t *testing.T) {
	w := world(t, 1, nil)
	if _, err := sim.Run(w, 0, task.Create("/g", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	// The caller's deadline passes while the cleanup waits on a reply
	// (here one that never comes): the caller gets the deadline, and the
	// cleanup runs again as a flow of its own, without the deadline.
	runs, finished := 0, false
	del := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		runs++
		if runs == 1 {
			return // waits forever; abandoned when its scope ends
		}
		finished = true
		k(task.Unit{}, nil)
	})
	_, err := sim.Run(w, 0, c.Timeout(zkops.Detached(del), 100*time.Millisecond))
	if !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("Detached under a passed deadline = %v, want ErrDeadlineExceeded", err)
	}
	if !w.Settle(func() bool { return finished }) || runs != 2 {
		t.Errorf("the cleanup did not outlive the caller's deadline: %d runs, finished %v, client errors %v", runs, finished, w.Errs)
	}
	// A cleanup cut short by the caller's deadline, ending with the
	// scope's error (as a Retry waiting for a reconnect does), did not do
	// its work either: it runs again as a flow of its own.
	runs, finished = 0, false
	cut := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		runs++
		if runs == 1 {
			c.Sleep(time.Hour)(s, k) // ends with the scope's error at the deadline
			return
		}
		finished = true
		k(task.Unit{}, nil)
	})
	_, err = sim.Run(w, 0, c.Timeout(zkops.Detached(cut), 100*time.Millisecond))
	if !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("Detached under a passed deadline = %v, want ErrDeadlineExceeded", err)
	}
	if !w.Settle(func() bool { return finished }) || runs != 2 {
		t.Errorf("the cleanup cut short by the caller's deadline did not run again: %d runs, finished %v, client errors %v", runs, finished, w.Errs)
	}
	// Ended in the caller's flow, the cleanup is withdrawn: it runs once.
	runs = 0
	once := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) { runs++; k(task.Unit{}, nil) })
	if _, err := sim.Run(w, 0, zkops.Detached(once)); err != nil || runs != 1 {
		t.Errorf("Detached = %v after %d runs, want nil after 1", err, runs)
	}
	w.Drive()
	if runs != 1 {
		t.Errorf("a cleanup that ended ran again: %d runs", runs)
	}
	// The end of the session is success; other errors are returned.
	if _, err := sim.Run(w, 0, zkops.Detached(task.Fail[task.Unit](task.ErrSessionExpired))); err != nil {
		t.Errorf("Detached(session expired) = %v", err)
	}
	if _, err := sim.Run(w, 0, zkops.Detached(task.Fail[task.Unit](task.ErrNotEmpty))); !errors.Is(err, task.ErrNotEmpty) {
		t.Errorf("Detached(not empty) = %v", err)
	}
}

func TestWaitChange(t *testing.T) {
	w := world(t, 1, nil)
	// Missing: done at once, gone.
	if gone, err := sim.Run(w, 0, zkops.WaitChange("/p")); err != nil || !gone {
		t.Fatalf("WaitChange on a missing node: %v, %v", gone, err)
	}
	if _, err := sim.Run(w, 0, task.Create("/p", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	// There: waits until the node changes; a data change is not gone.
	o := sim.Submit(w, 0, zkops.WaitChange("/p"))
	w.Drive()
	if o.Done {
		t.Fatalf("WaitChange ended with the node unchanged: %v", o.Err)
	}
	if _, err := sim.Run(w, 0, task.Set("/p", []byte("x"), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil || o.V {
		t.Errorf("WaitChange after a write: %+v, want done, not gone", o)
	}
	// A delete is gone.
	o = sim.Submit(w, 0, zkops.WaitChange("/p"))
	w.Drive()
	if _, err := sim.Run(w, 0, task.Delete("/p", task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil || !o.V {
		t.Errorf("WaitChange after the delete: %+v, want done, gone", o)
	}
	if _, err := sim.Run(w, 0, zkops.WaitChange("bad")); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("WaitChange(bad) = %v, want ErrInvalidPath", err)
	}
}

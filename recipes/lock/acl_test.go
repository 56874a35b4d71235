package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// Every node the lock creates carries the ACL its WithACL provider gives
// for the node's path: the directory and its ancestors (made on first
// use), the holder's contender node and the node of a waiter queued behind
// it; and, with the option left out, none does (acltest.Check).
func TestACL(t *testing.T) {
	acltest.Check(t, []string{"/acl", "/acl/locks", "/acl/locks/l", "/acl/locks/l/_c_*"}, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		l, err := lock.New("/acl/locks/l", lock.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		h, err := mustRun(t, w, 0, l.Acquire())
		if err != nil {
			t.Fatal(err)
		}
		waiter := sim.Submit(w, 1, l.Acquire())
		w.Drive()
		if _, err := mustRun(t, w, 0, h.Release()); err != nil {
			t.Fatal(err)
		}
		if !w.Settle(func() bool { return waiter.Done }) || waiter.Err != nil {
			t.Fatalf("waiter: %+v", waiter)
		}
		if _, err := mustRun(t, w, 1, waiter.V.Release()); err != nil {
			t.Fatal(err)
		}
		if n := len(w.Server.Paths()); n == 0 {
			t.Fatal("no node on the server")
		}
		return creates()
	})
}

// NewClient passes WithACL on to the lock.
func TestClientACL(t *testing.T) {
	acltest.Check(t, []string{"/acl", "/acl/m/_c_*"}, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		srv := fakezk.New(fakezk.Config{Async: true})
		t.Cleanup(func() { _ = srv.Close() })
		rec := acltest.Wrap(srv.Connect(fakezk.ConnConfig{}))
		ex := acltest.Running(t, executor.Config{Conn: rec, Clock: srv.Clock(), Seed: 1})
		m, err := lock.NewClient(ex, "/acl/m", lock.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Release(context.Background(), h); err != nil {
			t.Fatal(err)
		}
		return rec.Creates()
	})
}

// Held.Release's doc: a delete an ACL refuses (an operator closed the
// directory) "fails with task.ErrNoAuth and goes on in the background
// until the ACL lets it or the session ends". The holder's directory is
// made read only; Release fails with ErrNoAuth at once; a contender
// behind it waits; once the directory opens again, the node goes within
// task.RecheckAfter and the contender holds. On the code before, the
// node stayed until the holder's session ended, and the contender with it.
func TestReleaseRefusedByACLGoesOnceTheDirectoryOpens(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l := mustLock(t, "/acl/l")
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	waiter := sim.Submit(w, 1, l.Acquire())
	w.Drive()
	readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL("/acl/l", readOnly); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, h.Release()); !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("Release under a closed directory = %v, want ErrNoAuth at once", err)
	}
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return waiter.Done || !w.Clock.Now().Before(until) })
	if waiter.Done {
		t.Fatalf("the contender ended while the holder's node could not be deleted: %v", waiter.Err)
	}
	if err := w.Server.AdminSetACL("/acl/l", task.OpenACL); err != nil {
		t.Fatal(err)
	}
	opened := w.Clock.Now()
	w.Settle(func() bool { return waiter.Done || w.Clock.Now().Sub(opened) > 3*w.Timeout() })
	if !waiter.Done || waiter.Err != nil {
		t.Fatalf("the contender after the directory opened: done=%v err=%v (%s later)", waiter.Done, waiter.Err, w.Clock.Now().Sub(opened))
	}
	if took := w.Clock.Now().Sub(opened); took > 2*w.Timeout() {
		t.Fatalf("the contender held %s after the directory opened, want within twice the session timeout", took)
	}
	if _, _, ok := w.NodeData(h.Path()); ok {
		t.Fatalf("the released node %s is still there", h.Path())
	}
}

// Held.Fenced: "A check an ACL refuses (task.ErrNoAuth: an operator took
// READ from the lock node) counts as a loss too: the hold ends and its
// node is deleted."
func TestFencedCheckRefusedByACLIsALoss(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l, err := lock.New("/acl/fenced")
	if err != nil {
		t.Fatal(err)
	}
	h, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	noRead := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL(h.Path(), noRead); err != nil {
		t.Fatal(err)
	}
	_, err = mustRun(t, w, 0, h.Fenced(task.CreateOp("/acl/written", nil, task.Persistent)))
	if !errors.Is(err, lock.ErrLockLost) || !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("fenced write with its check refused: %v, want ErrLockLost and task.ErrNoAuth", err)
	}
	w.Drive()
	if !errors.Is(h.Err(), lock.ErrLockLost) {
		t.Errorf("hold after its check was refused: Err %v, want ErrLockLost", h.Err())
	}
	if _, ok := w.NodeStat(h.Path()); ok {
		t.Errorf("the lock node %s is still there", h.Path())
	}
	if _, ok := w.NodeStat("/acl/written"); ok {
		t.Error("the fenced write was applied")
	}
}

package rwlock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// Every node the lock creates carries the ACL its WithACL provider gives
// for the node's path: the directory and its ancestors (made on first
// use), a reader's node and a writer's queued behind it; and, with the
// option left out, none does (acltest.Check).
func TestACL(t *testing.T) {
	acltest.Check(t, []string{"/acl", "/acl/locks", "/acl/locks/rw", "/acl/locks/rw/_c_*"}, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		l, err := rwlock.New("/acl/locks/rw", rwlock.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		h, err := mustRun(t, w, 0, l.AcquireRead())
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
		m, err := rwlock.NewClient(ex, "/acl/m", rwlock.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		for _, lock := range []func(context.Context) (*rwlock.Held, error){m.AcquireRead, m.Acquire} {
			h, err := lock(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Release(context.Background(), h); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Creates()
	})
}

// RWLock.TryAcquire's doc: "Whichever way it ends it leaves no node
// behind"; ErrBusy: "Its own node is deleted." A try behind a writer
// whose withdrawal an ACL refuses (an operator closed the directory as
// it withdrew) fails with the refusal, task.ErrNoAuth, not ErrBusy: its
// node is still there. The delete goes on in the background, and the
// node is gone within twice the session timeout once the ACL is put
// back. On the code before, the try failed with ErrBusy with its node
// still in the directory.
func TestTryWithdrawalRefusedByACLIsNotBusy(t *testing.T) {
	for _, mode := range []string{"write", "read"} {
		t.Run(mode, func(t *testing.T) {
			const dir = "/acl/rw"
			w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: sim.ReadOnlyBeforeDelete(1, dir)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			l := mustLock(t, dir)
			h, err := mustRun(t, w, 0, l.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			try := l.TryAcquire()
			if mode == "read" {
				try = l.TryAcquireRead()
			}
			_, err = mustRun(t, w, 1, try)
			if errors.Is(err, rwlock.ErrBusy) || !errors.Is(err, task.ErrNoAuth) {
				t.Fatalf("Try%s whose withdrawal the directory's ACL refused: %v, want ErrNoAuth (not ErrBusy: its node is left)", mode, err)
			}
			if kids := w.Children(dir); len(kids) != 2 {
				t.Fatalf("while the directory is closed it holds %v, want the holder's node and the try's", kids)
			}
			took, kids, err := w.Reopen(dir, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(kids) != 1 || took > 2*w.Timeout() {
				t.Fatalf("%s after the directory opened it holds %v, want the holder's node alone within twice the session timeout", took, kids)
			}
			if _, ok := w.Server.NodeStat(h.Path()); !ok {
				t.Fatalf("the holder's node %s is gone", h.Path())
			}
		})
	}
}

package barrier_test

import (
	"context"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/task"
)

// Every node a barrier creates carries the ACL its WithACL provider gives
// for the node's path: a Barrier's node and the ancestors Set makes; a
// double barrier's directory and ancestors, participant nodes and ready
// node; and, with the option left out, none does (acltest.Check).
func TestACL(t *testing.T) {
	want := []string{"/acl", "/acl/gate", "/acl/gate/b", "/acl/double", "/acl/double/r1", "/acl/double/r1/_p_*", "/acl/double/r1/" + barrier.ReadyNode}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		b, err := barrier.New("/acl/gate/b", barrier.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(w, 0, b.Set([]byte("x"))); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(w, 0, b.Remove()); err != nil {
			t.Fatal(err)
		}
		d, err := barrier.NewDouble("/acl/double/r1", 2, barrier.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		e0, e1 := sim.Submit(w, 0, d.Enter()), sim.Submit(w, 1, d.Enter())
		if !w.Settle(func() bool { return e0.Done && e1.Done }) || e0.Err != nil || e1.Err != nil {
			t.Fatalf("enter: %+v %+v", e0, e1)
		}
		l0, l1 := sim.Submit(w, 0, e0.V.Leave()), sim.Submit(w, 1, e1.V.Leave())
		if !w.Settle(func() bool { return l0.Done && l1.Done }) || l0.Err != nil || l1.Err != nil {
			t.Fatalf("leave: %+v %+v", l0, l1)
		}
		return creates()
	})
}

// NewClient and NewDoubleClient pass WithACL on to the barriers they run.
func TestBlockingACL(t *testing.T) {
	acltest.Check(t, []string{"/acl", "/acl/gate", "/acl/double", "/acl/double/_p_*"}, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		srv := fakezk.New(fakezk.Config{Async: true})
		t.Cleanup(func() { _ = srv.Close() })
		rec := acltest.Wrap(srv.Connect(fakezk.ConnConfig{}))
		ex := acltest.Running(t, executor.Config{Conn: rec, Clock: srv.Clock(), Seed: 1})
		ctx := context.Background()
		g, err := barrier.NewClient(ex, "/acl/gate", barrier.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Set(ctx, nil); err != nil {
			t.Fatal(err)
		}
		d, err := barrier.NewDoubleClient(ex, "/acl/double", 1, barrier.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.Enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Leave(ctx, p); err != nil {
			t.Fatal(err)
		}
		return rec.Creates()
	})
}

package group_test

import (
	"context"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/task"
)

// Every node the group creates carries the ACL its WithACL provider gives
// for the node's path: the directory and its ancestors (made on the first
// join), a member's node, and the node a member registers again after its
// session expired; and, with the option left out, none does
// (acltest.Check).
func TestACL(t *testing.T) {
	acltest.Check(t, []string{"/acl", "/acl/g", "/acl/g/a"}, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		g, err := group.New("/acl/g", group.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		m, err := sim.Run(w, 0, g.Join("a", []byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		old := m.Session()
		w.Server.Expire(w.Conns[0])
		if !w.Settle(func() bool { return m.Registered() && m.Session().ID != old.ID }) {
			t.Fatal("member not registered again after expiry")
		}
		n := 0
		for _, c := range creates() {
			if c.Path == m.Path() {
				n++
			}
		}
		if n < 2 {
			t.Fatalf("member node created %d times, want at least 2 (join, then after the expiry)", n)
		}
		if _, err := sim.Run(w, 0, m.Leave()); err != nil {
			t.Fatal(err)
		}
		return creates()
	})
}

// NewClient passes WithACL on to the group.
func TestClientACL(t *testing.T) {
	acltest.Check(t, []string{"/acl", "/acl/g/a"}, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		srv := fakezk.New(fakezk.Config{Async: true})
		t.Cleanup(func() { _ = srv.Close() })
		rec := acltest.Wrap(srv.Connect(fakezk.ConnConfig{}))
		ex := acltest.Running(t, executor.Config{Conn: rec, Clock: srv.Clock(), Seed: 1})
		cl, err := group.NewClient(ex, "/acl/g", group.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		m, err := cl.Join(context.Background(), "a", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Leave(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		return rec.Creates()
	})
}

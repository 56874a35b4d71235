package config_test

import (
	"context"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/task"
)

// Every node a write creates carries the ACL its WithACL provider gives
// for the node's path: Update's marker and new entries, in its multi;
// UpdateMarked's marker and the entry it creates; and, with the option
// left out, none does (acltest.Check). The root is the test's own create,
// with the provider's ACL too.
func TestACL(t *testing.T) {
	want := []string{"/acl", "/acl/" + config.MarkerName, "/acl/a", "/acl/b", "/acl/c"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := sim.Run(w, 0, task.CreateWith(&task.CreateRequest{Path: "/acl", ACL: acl.For("/acl")})); err != nil {
			t.Fatal(err)
		}
		opt := config.WithACL(acl)
		if _, err := sim.Run(w, 0, config.Update("/acl", map[string][]byte{"a": []byte("1"), "b": []byte("2")}, opt)); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(w, 0, config.UpdateMarked("/acl", map[string][]byte{"b": []byte("3"), "c": []byte("4")}, opt)); err != nil {
			t.Fatal(err)
		}
		markers := 0
		for _, c := range creates() {
			if c.Path == "/acl/"+config.MarkerName {
				markers++
			}
		}
		if markers != 2 {
			t.Fatalf("marker created %d times, want 2 (Update's multi, UpdateMarked)", markers)
		}
		return creates()
	})
}

// WriteToHandlerLatency creates its node with the option's ACL.
func TestWriteToHandlerLatencyACL(t *testing.T) {
	acltest.Check(t, []string{"/acl-lat"}, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		srv := fakezk.New(fakezk.Config{Async: true})
		t.Cleanup(func() { _ = srv.Close() })
		rec := acltest.Wrap(srv.Connect(fakezk.ConnConfig{}))
		ex := acltest.Running(t, executor.Config{Conn: rec, Clock: srv.Clock(), Seed: 1})
		if _, err := config.WriteToHandlerLatency(context.Background(), ex, ex, "/acl-lat", 2, config.WithACL(acl)); err != nil {
			t.Fatal(err)
		}
		return rec.Creates()
	})
}

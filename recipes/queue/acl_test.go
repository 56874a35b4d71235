package queue_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// Every node the queue creates carries the ACL its WithACL provider gives
// for the node's path: the directories and their ancestors, items, an
// at-least-once consumer's marker, an in-flight copy (in the take's
// multi), and the item and the marker of a return (in its multi); and,
// with the option left out, none does (acltest.Check).
func TestACL(t *testing.T) {
	want := []string{"/acl", "/acl/q", "/acl/q/qn-*", "/acl/q.inflight", "/acl/q.consumers",
		"/acl/q.inflight/*", "/acl/q.consumers/*"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		qa := mustNew(t, "/acl/q", queue.WithMode(queue.AtLeastOnce), queue.WithACL(acl))
		qb := mustNew(t, "/acl/q", queue.WithMode(queue.AtLeastOnce), queue.WithACL(acl))
		if _, err := mustRun(t, w, 0, qa.Put([]byte("x"))); err != nil {
			t.Fatal(err)
		}
		if _, err := mustRun(t, w, 0, qa.Take()); err != nil {
			t.Fatal(err)
		}
		w.Server.Expire(w.Conns[0]) // the item goes back, by client 1's return
		it, err := mustRun(t, w, 1, qb.Take())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mustRun(t, w, 1, it.Ack()); err != nil {
			t.Fatal(err)
		}
		return creates()
	})
}

package zkops_test

import (
	"errors"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// A waiter behind a node it may not READ fails with ErrNoAuth at once:
// ZooKeeper tells no session of a change to a node it may not read, so an
// exists watch there would never fire and the waiter (a lock's, an
// election's contender) would wait for ever.
func TestWaitChangeBehindAnUnreadableNode(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	unreadable := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
	if _, err := sim.Run(w, 1, c.Seq(task.Create("/q", nil, task.Persistent),
		task.CreateWith(&task.CreateRequest{Path: "/q/p", Mode: task.Persistent, ACL: unreadable}))); err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, zkops.WaitChange("/q/p"))
	w.Drive()
	if _, err := sim.Run(w, 1, task.Delete("/q/p", -1)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o.Done }) {
		t.Fatal("WaitChange behind a node it may not read never ended, though the node is gone")
	}
	if !errors.Is(o.Err, task.ErrNoAuth) {
		t.Fatalf("WaitChange = %v, %v; want ErrNoAuth", o.V, o.Err)
	}
}

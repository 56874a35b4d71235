package zkops_test

import (
	"context"
	"errors"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Holding.CountKept's doc: a release's delete an ACL refused, which goes
// on in the background (KeepDeleting), is counted in the Holding's
// Pending "until it ends: the node is gone, or the session ended". The
// count is there as the refusal is reported, stays while the ACL refuses
// the delete, and ends with the node once the ACL lets it (opened), or
// with the session (expired). No second delete is started: one flow
// deletes the node, and the count ends with it.
func TestCountKeptEndsWithTheKeptDelete(t *testing.T) {
	for _, end := range []string{"opened", "expired"} {
		t.Run(end, func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			sess, err := sim.Run(w, 0, c.Seq(task.Create("/d", nil, task.Persistent), c.Seq(task.Create("/d/e", nil, task.Ephemeral),
				task.Func(func(s *task.Scope) (task.Session, error) { return s.Session(), nil }))))
			if err != nil {
				t.Fatal(err)
			}
			_, st, _ := w.NodeData("/d/e")
			var p blocking.Pending
			idle := func() bool {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return p.Wait(ctx, "test") == nil
			}
			var h zkops.Holding
			h.Init("/d/e", st, sess, errors.New("lost"), nil)
			h.Count(&p)
			readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
			if err := w.Server.AdminSetACL("/d", readOnly); err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Run(w, 0, h.CountKept(zkops.DeleteMine("/d/e"))); !errors.Is(err, task.ErrNoAuth) {
				t.Fatalf("release under a closed directory = %v, want ErrNoAuth", err)
			}
			if idle() {
				t.Fatal("the refused delete going on in the background is not counted")
			}
			until := w.Clock.Now().Add(3 * w.Timeout())
			w.Settle(func() bool { return !w.Clock.Now().Before(until) })
			if _, _, ok := w.NodeData("/d/e"); !ok {
				t.Fatal("the node went while its directory refused deletes")
			}
			if idle() {
				t.Fatal("the count ended while the ACL refused the delete")
			}
			switch end {
			case "opened":
				if err := w.Server.AdminSetACL("/d", task.OpenACL); err != nil {
					t.Fatal(err)
				}
				w.Settle(func() bool {
					if _, _, ok := w.NodeData("/d/e"); ok && idle() {
						t.Error("the count ended before the node went")
						return true
					}
					return idle() || w.Clock.Now().After(until.Add(3*w.Timeout()))
				})
				if _, _, ok := w.NodeData("/d/e"); ok {
					t.Fatal("the node is still there after the directory opened")
				}
			case "expired":
				w.Server.Expire(w.Conns[0])
				w.Settle(func() bool { return idle() || w.Clock.Now().After(until.Add(3*w.Timeout())) })
			}
			if !idle() {
				t.Fatalf("the count did not end with the kept delete (%s)", end)
			}
		})
	}
}

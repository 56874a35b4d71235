package partition_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// On a real server: a member whose session ends gives its items up to
// the other member, and a write made with one of its old holds (late,
// from another session, as a paused process's would arrive) is refused;
// a hold whose lock node an operator deletes is lost, its writes refused,
// and the item is taken again under a new, higher token.
func TestRealHandover(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	items := []string{"a", "b", "c", "d"}
	stable := partition.WithStable(100 * time.Millisecond)
	ca, cb := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{}), realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{})
	pa, _ := partition.NewClient(ca.Ex, "/real-part", items, stable)
	pb, _ := partition.NewClient(cb.Ex, "/real-part", items, stable)
	if _, err := executor.Await(ctx, cb.Ex, task.Create("/real-data", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	ma, err := pa.Join(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := pb.Join(ctx, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	// waitHeld waits until m holds n items in state Acquired.
	waitHeld := func(c *partition.Client, m *partition.Member, n int) []partition.Hold {
		t.Helper()
		for {
			held, err := c.Wait(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(held) == n {
				return held
			}
			if _, err := executor.Await(ctx, cb.Ex, task.Sync("/")); err != nil { // a round trip, then look again
				t.Fatal(err)
			}
		}
	}
	old := waitHeld(pa, ma, 2)
	waitHeld(pb, mb, 2)

	// An operator deletes one of a's lock nodes: that hold is lost, and a
	// takes the item again under a higher token.
	lost := old[0]
	if _, err := executor.Await(ctx, cb.Ex, task.Delete(lost.Path, task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(ctx, ca.Ex, lost.Fenced(task.CreateOp("/real-data/late1", nil, task.Persistent))); !errors.Is(err, partition.ErrLost) {
		t.Fatalf("write with a hold whose node was deleted = %v, want ErrLost", err)
	}
	for {
		if h, ok := ma.Hold(lost.Item); ok && h.Token > lost.Token {
			break
		}
		if _, err := pa.Wait(ctx, ma); err != nil {
			t.Fatal(err)
		}
		if _, err := executor.Await(ctx, ca.Ex, task.Sync("/")); err != nil {
			t.Fatal(err)
		}
	}

	// a's session ends (its process stops): b takes every item, and a
	// write made with one of a's holds, sent on b's session, is refused.
	held := ma.Held()
	ca.Stop()
	got := waitHeld(pb, mb, len(items))
	for _, h := range got {
		for _, o := range held {
			if h.Item == o.Item && h.Token <= o.Token {
				t.Fatalf("item %s: b's token %d not above a's %d", h.Item, h.Token, o.Token)
			}
		}
	}
	if _, err := executor.Await(ctx, cb.Ex, held[0].Fenced(task.CreateOp("/real-data/late2", nil, task.Persistent))); !errors.Is(err, partition.ErrLost) {
		t.Fatalf("late write with a hold of an ended session = %v, want ErrLost", err)
	}
	if err := pb.Leave(ctx, mb); err != nil {
		t.Fatal(err)
	}
}

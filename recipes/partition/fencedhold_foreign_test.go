package partition_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// FencedHold applies ops behind "one of m's holds": a Hold another
// member handed out (another process's, or another member's on the same
// executor) is refused, nothing sent. Its fence, the lock node at its
// version, lets the write in while that other member holds the item: a
// write by a process that holds nothing.
func TestFencedHoldRefusesAHoldItsMemberDidNotHandOut(t *testing.T) {
	cs, exs := clients(t, 2, "/fh", []string{"x"}, partition.WithStable(20*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m0, err := cs[0].Join(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs[0].Leave(ctx, m0)
	held, err := cs[0].Wait(ctx, m0)
	if err != nil || len(held) != 1 {
		t.Fatalf("Wait = %v, %v", held, err)
	}
	for _, on := range []struct {
		name string
		ex   int
	}{{"another process", 1}, {"another member on the same executor", 0}} {
		c, err := partition.NewClient(exs[on.ex], "/other-"+string(rune('a'+on.ex)), []string{"y"}, partition.WithStable(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.Join(ctx, "b", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Wait(ctx, m); err != nil {
			t.Fatal(err)
		}
		path := "/written-through-" + string(rune('a'+on.ex))
		_, err = c.FencedHold(ctx, m, held[0], task.CreateOp(path, nil, task.Persistent))
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s: FencedHold with member a's hold of %q = %v, want task.ErrInvalidArgument", on.name, held[0].Item, err)
		}
		if st, err := executor.Await(ctx, exs[0], task.Exists(path)); err != nil || st != nil {
			t.Errorf("%s: the write through a foreign hold was applied (%v, %v)", on.name, st, err)
		}
		if err := c.Leave(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// Its own member's hold still passes.
	if _, err := cs[0].FencedHold(ctx, m0, held[0], task.CreateOp("/written-by-a", nil, task.Persistent)); err != nil {
		t.Fatalf("FencedHold with the member's own hold = %v", err)
	}
}

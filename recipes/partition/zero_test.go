package partition_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Errors of bad input are typed: Join fails "with an error wrapping
// task.ErrInvalidPath" for a bad identifier, a nil Partitioner with
// task.ErrInvalidArgument, and the Client's "nil values give typed
// errors" (TestClient); a Partitioner is "what New validated". Values
// that did not come from New or NewClient (zero values) are refused
// the same way, with task.ErrInvalidArgument and nothing sent, as a nil
// one is.
//
// On the code before, a zero Client's Join panicked (c.p.Path() on a nil
// *Partitioner), and a zero Partitioner's Join made a member whose
// party node went under the server's root (/party/<hex>-x, its path
// ""), which then panicked on the executor goroutine when its stability
// timer fired (a nil Assign called: only New puts KazooAssign in).
func TestZeroValuesAreRefused(t *testing.T) {
	t.Run("Client.Join", func(t *testing.T) {
		var err error
		panicked := func() (p any) {
			defer func() { p = recover() }()
			_, err = (&partition.Client{}).Join(context.Background(), "x", nil)
			return nil
		}()
		if panicked != nil || !errors.Is(err, task.ErrInvalidArgument) {
			t.Fatalf("Join on a zero Client: panic %v, err %v; want task.ErrInvalidArgument", panicked, err)
		}
	})
	t.Run("Partitioner.Join", func(t *testing.T) {
		w := newWorld(t, 1, 1)
		var err error
		panicked := func() (p any) {
			defer func() { p = recover() }()
			_, err = sim.Run(w, 0, (&partition.Partitioner{}).Join("x", nil))
			w.Settle(func() bool { return false })
			return nil
		}()
		if panicked != nil || !errors.Is(err, task.ErrInvalidArgument) || len(w.Children("/party")) != 0 {
			t.Fatalf("Join on a zero Partitioner: panic %v, err %v, nodes under /party %v; want task.ErrInvalidArgument and nothing made",
				panicked, err, w.Children("/party"))
		}
	})
}

package discovery_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// The project's standard: "Bad input gets a clear typed error within a
// stated time, never a panic." WithRand's fn should draw in [0, n); one
// that draws outside it (an off-by-one, a rand.Int63 passed as is) makes
// Get index out of range.
func TestAdvProviderRandOutOfRange(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	ins := []discovery.Instance{{Name: "s", ID: "a"}, {Name: "s", ID: "b"}}
	for _, draw := range []int{2, -1} {
		p, err := discovery.NewProvider(func() []discovery.Instance { return ins }, w.Clock,
			discovery.WithStrategy(discovery.Random), discovery.WithRand(func(int) int { return draw }))
		if err != nil {
			t.Fatal(err)
		}
		got, err := func() (in discovery.Instance, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return p.Get()
		}()
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("Get with a Rand that draws %d of 2 = %v, %v; want an error wrapping ErrInvalidArgument", draw, got.ID, err)
		}
	}
}

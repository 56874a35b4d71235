package group_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many times it joins and
// leaves a group: memcheck.Cycles join/leave cycles on one session leave
// the live scope count under the session scope where it was after the
// warm-up and the live heap within memcheck.Bound of it. Measured for a
// member alone, and for a view started before the join and stopped after
// the leave (the join and the leave fire the view's watch, so the cycle
// leaves no watch pending).
func TestMemoryFlatJoinLeave(t *testing.T) {
	for _, tc := range []struct {
		name string
		view bool
	}{{"member", false}, {"view", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			g, err := group.New("/mem/group")
			if err != nil {
				t.Fatal(err)
			}
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
				var v *group.View
				if tc.view {
					v = must(t, w, g.Watch(func(group.Change) {}))
				}
				m := must(t, w, g.Join("m", nil))
				must(t, w, m.Leave())
				if v != nil {
					w.Drive() // the view hears both
					must(t, w, v.Stop())
				}
			})
			for _, err := range w.Errs {
				t.Errorf("detached flow failed: %v", err)
			}
		})
	}
}

func must[T any](t *testing.T, w *sim.World, tk task.Task[T]) T {
	t.Helper()
	v, err := sim.Run(w, 0, tk)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

package fence_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/recipes/fence/internal/simstore"
	"github.com/zkflow/zkflow/task"
)

// The tasks refuse bad input at once, with the errors of the blocking
// calls: a token that is not positive, a nil store, a nil function.
func TestTasksBadInput(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	store := simstore.New(simstore.Config{Clock: w.Clock, Seed: 1})
	st := store.Client(0)
	for name, tk := range map[string]task.Task[task.Unit]{
		"token 0":        fence.WriteTask(st, "k", 0, nil),
		"negative token": fence.DeleteTask(st, "k", -3),
		"nil store":      fence.WriteTask[uint64](nil, "k", 1, nil),
	} {
		if _, err := sim.Run(w, 0, tk); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s: %v; want ErrInvalidArgument", name, err)
		}
	}
	if _, err := sim.Run(w, 0, fence.UpdateTask(st, "k", 1, nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil function: %v", err)
	}
	if _, err := sim.Run(w, 0, fence.ReadTask(st, "k", 0)); !errors.Is(err, fence.ErrInvalidToken) {
		t.Errorf("read with token 0: %v", err)
	}
	if h := store.History(); len(h) != 0 {
		t.Errorf("bad input reached the store: %v", h)
	}
}

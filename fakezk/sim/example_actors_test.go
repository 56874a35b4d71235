package sim_test

import (
	"fmt"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Blocking code under the simulation: an actor is a goroutine that calls
// the blocking APIs as a user's code does (here executor.Await; the
// recipes' Clients alike), in lockstep with the world, with a context
// whose deadline is on the simulated clock.
func ExampleWorld_Go() {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	w.Go(0, func(a *sim.Actor) {
		p, err := executor.Await(a.Context(), a.Exec(), task.Create("/job-", nil, task.PersistentSequential))
		fmt.Println("created", p, err)
		t0 := a.World().Clock.Now()
		ctx, cancel := a.WithTimeout(a.Context(), time.Second)
		defer cancel()
		// Waits for a node nobody creates: the context ends first.
		_, err = executor.Await(ctx, a.Exec(), task.Task[task.Unit](func(*task.Scope, task.Cont[task.Unit]) {}))
		fmt.Println(err, "after", a.World().Clock.Now().Sub(t0))
	})
	w.Settle(func() bool { return w.Actors() == 0 })
	// Output:
	// created /job-0000000000 <nil>
	// executor.Await: deadline exceeded: the context's deadline passed while the flow ran after 1s
}

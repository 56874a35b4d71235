package sim_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
)

// BenchmarkActorContexts is what a blocking call in a simulated actor
// makes of contexts: one WithTimeout and one WithCancel under the
// actor's context, both canceled, all in one actor's turn.
//
//	go test -run '^$' -bench BenchmarkActorContexts -benchmem ./fakezk/sim
func BenchmarkActorContexts(b *testing.B) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	n := 0
	w.Go(0, func(a *sim.Actor) {
		for b.Loop() {
			tctx, tcancel := a.WithTimeout(a.Context(), time.Second)
			cctx, ccancel := a.WithCancel(tctx)
			ccancel()
			tcancel()
			if cctx.Err() == nil {
				b.Error("child context not ended")
				return
			}
			n++
		}
	})
	w.Step()
	if n == 0 {
		b.Fatal("no context made")
	}
}

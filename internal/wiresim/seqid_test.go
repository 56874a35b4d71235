package wiresim_test

import (
	"context"
	"sync"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/wiresim"
	"github.com/zkflow/zkflow/recipes/seqid"
)

const seqPath = "/ids"

// ids is sim.IDs shared by the clients' goroutines.
type ids struct {
	mu  sync.Mutex
	ids *sim.IDs
}

// seqidScenario: every client draws IDs one at a time (block size 1, a
// compare-and-set per ID) through seqid's blocking face over zkadapter.
// Judged by the in-memory scenario's checker, sim.IDs: no ID handed out
// twice (at once, as it happens) and the history of calls linearizable
// as a counter with gaps (a call that failed counts as unknown: it may
// have taken an ID that was never handed out).
func seqidScenario() wiresim.Scenario {
	return wiresim.Scenario{
		Name:   "wire-seqid",
		Faults: wiresim.AllClasses,
		Setup: func(r *wiresim.Run, ctx context.Context) error {
			r.Value = &ids{ids: sim.NewIDs()}
			return nil // the recipe creates its node
		},
		Client: func(r *wiresim.Run, ctx context.Context, i int) {
			j := r.Value.(*ids)
			g, err := seqid.NewClient(r.Execs[i], seqPath, 1)
			if err != nil {
				r.Errorf("client %d: %v", i, err)
				return
			}
			for ctx.Err() == nil {
				j.mu.Lock()
				j.ids.Call(i)
				j.mu.Unlock()
				id, err := g.Next(ctx)
				j.mu.Lock()
				if err != nil {
					j.ids.Unknown(i)
				} else if err := j.ids.Return(i, id); err != nil {
					r.Errorf("client %d: %v", i, err)
				}
				j.mu.Unlock()
				switch {
				case err == nil:
					r.Count("ids", 1)
					r.Progress(i)
				case !expected(err):
					r.Errorf("client %d: next: %v", i, err)
				default:
					r.Count("calls-failed", 1)
				}
			}
		},
		Check: func(r *wiresim.Run) error {
			j := r.Value.(*ids)
			j.mu.Lock()
			defer j.mu.Unlock()
			return j.ids.Linearizable()
		},
	}
}

package wiresim_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/wiresim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

const (
	electionDir = "/election"
	electionLog = "/terms"
)

// electionScenario: every client campaigns through the election's
// blocking face over zkadapter (each campaign bounded by a deadline drawn
// from the seed), and while it leads writes three fenced entries of the
// fencing log ("enter", "work", "exit") through Client.Fenced, then
// resigns. Judged as the lock is, by sim.CheckFencingOf: in the server's
// order the tokens of the fenced writes never go down, so the writes of
// two leaderships never interleave, whatever each leader believed. (The
// in-memory election scenarios also judge "never two acting leaders" by
// instants of the simulated clock, sim.Leaders; on the real clock a
// loaded machine pauses leaders past the election's margin, and the
// election's doc promises only fencing then.)
func electionScenario() wiresim.Scenario {
	return wiresim.Scenario{
		Name:   "wire-election",
		Faults: wiresim.AllClasses,
		Setup: func(r *wiresim.Run, ctx context.Context) error {
			return createAll(ctx, r, electionLog, electionDir)
		},
		Client: func(r *wiresim.Run, ctx context.Context, i int) {
			cl, err := election.NewClient(r.Execs[i], electionDir, election.WithData([]byte(fmt.Sprint(i))))
			if err != nil {
				r.Errorf("client %d: %v", i, err)
				return
			}
			rnd := r.Rand(i)
			for ctx.Err() == nil {
				cctx, cancel := context.WithTimeout(ctx, time.Duration(20+rnd.IntN(300))*time.Millisecond)
				l, err := cl.Campaign(cctx)
				cancel()
				if err != nil {
					if !expected(err) && !campaignAgain(err) {
						r.Errorf("client %d: campaign: %v", i, err)
					}
					r.Logf("client %d: campaign: %v", i, err)
					r.Count("campaigns-failed", 1)
					continue
				}
				r.Logf("client %d: leads as %s token %d", i, l.Path(), l.Token())
				wrote := 0
				for _, kind := range []string{"enter", "work", "exit"} {
					if _, err := cl.Fenced(ctx, l, sim.FencedEntry(electionLog, l.Token(), kind)); err != nil {
						if !expected(err) && !campaignAgain(err) {
							r.Errorf("client %d: fenced write: %v", i, err)
						}
						break
					}
					wrote++
				}
				if wrote == 3 {
					r.Progress(i)
				} else {
					r.Count("terms-cut-short", 1)
				}
				if err := cl.Resign(ctx, l); err != nil && !expected(err) && !campaignAgain(err) {
					r.Errorf("client %d: resign: %v", i, err)
				}
			}
		},
		Check: func(r *wiresim.Run) error {
			terms, err := sim.CheckFencingOf(r.Server, r.ServerPath(electionLog))
			r.Count("terms", terms)
			if err == nil && terms == 0 && r.Progressed(0)+r.Progressed(1)+r.Progressed(2) > 0 {
				err = fmt.Errorf("leaders wrote, and the fence log %s is empty", r.ServerPath(electionLog))
			}
			return err
		},
	}
}

// campaignAgain reports whether err is one after which the election's
// Lead campaigns again (its doc's list): the leadership or the candidate
// node lost, the directory changed under the campaign.
func campaignAgain(err error) bool {
	for _, e := range []error{election.ErrLost, task.ErrNoNode, task.ErrNodeExists, task.ErrBadVersion, task.ErrNotEmpty} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

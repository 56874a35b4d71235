package idpersist_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/task"
)

// The blocking face with contexts that end at every step: two goroutines
// of two processes call Client.Next in a loop, each call's context ending
// k steps of the world after it starts (k drawn per call, from the case's
// bound), while client 1's session expires at step j of the world, or
// not. Whatever the points: every call returns a new ID or its context's
// error, no ID is handed out twice, and none above the durable mark.
func TestClientNextContextEndsAtEveryStep(t *testing.T) {
	var got, ended int
	for bound := 1; bound <= 8; bound++ {
		for j := -1; j <= 5; j++ {
			t.Run(fmt.Sprintf("steps%d/expire%d", bound, j), func(t *testing.T) {
				w := newWorld(t, uint64(100*bound+j+2), 3, fakezk.Config{})
				w.replica(0)
				running := 0
				for i := 1; i <= 2; i++ {
					c, err := idpersist.NewClient(w.Execs[i], w.cfg)
					if err != nil {
						t.Fatal(err)
					}
					running++
					w.Go(i, func(a *sim.Actor) {
						defer func() { running-- }()
						for range 6 {
							ctx, cancel := a.CancelAfterSteps(a.Context(), a.Rand().IntN(bound+1)*4)
							id, err := c.Next(ctx)
							cerr := ctx.Err()
							cancel()
							switch {
							case err == nil:
								w.record(i, id)
								got++
							case cerr != nil && (errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrDeadlineExceeded)):
								ended++
							default:
								t.Errorf("client %d: Next: %v (its context: %v)", i, err, cerr)
								return
							}
						}
					})
				}
				for range j {
					w.Step()
				}
				if j >= 0 {
					w.Server.Expire(w.Conns[1])
				}
				w.settle(func() bool { return running == 0 })
				w.checkMark()
			})
		}
	}
	t.Logf("%d IDs handed out, %d calls ended by their context", got, ended)
	if got == 0 || ended == 0 {
		t.Error("the contexts never ended during Next, or always did: the steps drawn miss the calls")
	}
}

package config

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The blocking face with contexts that end at every step: a WatchDir
// whose context ends at any step k of the world after it starts (with the
// session also expiring at step j, or not) returns a Reader or the
// context's error, and in the second case leaves no watcher running; a
// Reader's Stop with a context that ends at any step stops the watcher
// all the same. A watcher left running would stay a live scope under the
// session (it keeps its watches set and reads on every change) until the
// session ends.
func TestClientContextEndsAtEveryStep(t *testing.T) {
	var opened, refused int
	for k := 0; k <= 20; k++ {
		for j := -1; j <= 4; j++ {
			t.Run(fmt.Sprintf("cancel%d/expire%d", k, j), func(t *testing.T) {
				// InJobEnds: one context in three ends inside a job of
				// the executor, as the flow it waits for ends.
				w, err := sim.New(sim.Config{Seed: uint64(10*k + j + 2), Clients: 2, InJobEnds: true})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				mkdir(t, w, "/cfg")
				run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1")}))
				base := w.Execs[0].SessionScope().Descendants()
				c, err := NewClient(w.Execs[0], "/cfg")
				if err != nil {
					t.Fatal(err)
				}
				done := false
				var openErr, stopErr error
				w.Go(0, func(a *sim.Actor) {
					defer func() { done = true }()
					ctx, cancel := a.CancelAfterSteps(a.Context(), k)
					defer cancel()
					r, err := c.WatchDir(ctx, DirOptions{})
					if openErr = err; err != nil {
						if ctx.Err() == nil || !(errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrDeadlineExceeded)) {
							t.Errorf("WatchDir: %v (its context: %v)", err, ctx.Err())
						}
						return
					}
					sctx, scancel := a.CancelAfterSteps(a.Context(), k/2)
					defer scancel()
					stopErr = r.Stop(sctx)
				})
				for range j {
					w.Step()
				}
				if j >= 0 {
					w.Server.Expire(w.Conns[0])
				}
				if !w.Settle(func() bool { return done }) {
					t.Fatal("WatchDir or Stop never returned")
				}
				if openErr == nil {
					opened++
				} else {
					refused++
				}
				// Changes that a watcher left running would follow.
				run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("2")}))
				w.Settle(func() bool { return w.Execs[0].SessionScope().Descendants() <= base })
				if n := w.Execs[0].SessionScope().Descendants(); n > base {
					t.Fatalf("%d live scopes under the session after WatchDir (%v) and Stop (%v) returned, %d before", n, openErr, stopErr, base)
				}
			})
		}
	}
	t.Logf("%d WatchDirs returned a Reader (then stopped), %d the context's error", opened, refused)
	if opened == 0 || refused == 0 {
		t.Error("the context never ended during WatchDir, or always did: the steps drawn miss the call")
	}
}

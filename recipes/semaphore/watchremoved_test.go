package semaphore_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// settleFor runs the world until d has passed on its clock.
func settleFor(w *sim.World, d time.Duration) {
	until := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
}

// Semaphore.Acquire "waits for a lease"; it fails with the scope's error,
// task.ErrSessionExpired, ErrLeaseLost "when someone else deleted the
// lease node or the internal lock's node while it waited", or "an
// operation's error that a retry cannot settle"; Client.Acquire "waits
// for a lease until ctx ends". Another user of the waiter's session
// takes its watches away: a recursive cache of PATH/leases on the same
// executor stops (its RemoveWatches of type Any ends every watch of the
// session on PATH/leases, the waiter's children watch too), and a
// RemoveWatches on the waiter's internal lock node ends the exists watch
// it keeps there. n = 1, client 1 holds the lease; the task face, and
// then a Client, wait on client 0. Each Acquire failed with
// task.ErrWatchRemoved, its lease still taken and nobody having touched
// its nodes; a removed watch is one more wake-up now: the waiter checks
// again and waits on, and holds once the lease is released. Fails on the
// code before the fix.
func TestAcquireOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		name := "task"
		if blocking {
			name = "client"
		}
		t.Run(name, func(t *testing.T) {
			w, _ := newWorld(t, 51, 2)
			m := mustSem(t, "/s", 1)
			held, err := mustRun(t, w, 1, m.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			var (
				l    *semaphore.Lease
				lErr error
				done bool
			)
			if blocking {
				cl, err := semaphore.NewClient(w.Execs[0], "/s", 1)
				if err != nil {
					t.Fatal(err)
				}
				w.Go(0, func(a *sim.Actor) {
					l, lErr = cl.Acquire(a.Context())
					done = true
					if lErr == nil {
						_ = cl.Release(a.Context(), l)
					}
				})
			} else {
				executor.Submit(w.Execs[0], m.Acquire(), func(v *semaphore.Lease, err error) { l, lErr, done = v, err, true })
			}
			w.Settle(func() bool { return len(w.Children("/s/leases")) == 2 && len(w.Children("/s/locks")) == 1 })
			locks := w.Children("/s/locks")
			if len(locks) != 1 || done {
				t.Fatalf("setup: the waiter is not waiting (locks %v, done %v: %v)", locks, done, lErr)
			}
			tc, err := cache.NewTree("/s/leases", cache.WithRecursive())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 0, tc.Start()); err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 0, tc.Stop()); err != nil {
				t.Fatal(err)
			}
			settleFor(w, 10*time.Second)
			if done {
				t.Fatalf("the Acquire ended with the lease taken, after another user of the session removed the watches on /s/leases: %v", lErr)
			}
			if _, err := mustRun(t, w, 0, task.RemoveWatches("/s/locks/"+locks[0], task.WatcherAny)); err != nil {
				t.Fatalf("RemoveWatches of the internal lock node: %v", err)
			}
			settleFor(w, 10*time.Second)
			if done {
				t.Fatalf("the Acquire ended with the lease taken, after another user of the session removed the watches on its internal lock node: %v", lErr)
			}
			if _, err := mustRun(t, w, 1, held.Release()); err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool { return done }) || lErr != nil {
				t.Fatalf("the Acquire after the release: %v (done %v)", lErr, done)
			}
			if !blocking {
				if _, err := mustRun(t, w, 0, l.Release()); err != nil {
					t.Fatal(err)
				}
			}
			w.Drive()
			if left := append(w.Children("/s/leases"), w.Children("/s/locks")...); len(left) != 0 {
				t.Fatalf("nodes left: %v", left)
			}
			noReportedErrors(t, w)
		})
	}
}

package queue_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// settleFor drives w until d of simulated time has passed.
func settleFor(w *sim.World, d time.Duration) {
	until := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
}

// Queue.Take: "waits for an item and takes the first one ... While the
// queue is empty it waits on a children watch of the directory. It fails
// with the scope's error when its deadline passes or it is canceled, with
// task.ErrSessionExpired when the session ends, and with an
// *UnknownTakeError"; Client.Take "waits until ctx ends for an item".
// Another user of the consumer's session takes its watch away: a
// recursive cache of the queue's directory on the same executor stops,
// and its RemoveWatches (of type Any) ends every watch of the session on
// the directory, the waiting take's children watch too. An at-most-once
// Take, of either face, failed with task.ErrWatchRemoved on an empty
// queue; it lists again and waits on now, and takes the item put later.
// At least once (where a wake-up already listed again, and held), the
// watch on the markers' directory, set while another consumer holds an
// item, is removed too: the takes still wake at that consumer's death and
// one takes its item. Fails on the code before the fix (at most once).
func TestTakeOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newWorld(t, 2)
			const dir = "/review/watched/jobs"
			c, err := queue.NewClient(w.Execs[0], dir, queue.WithMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			q1 := mustNew(t, dir, queue.WithMode(mode))
			if mode == queue.AtLeastOnce {
				// Client 1 holds an item: the waiting takes watch its
				// marker's directory too (its death returns the item).
				if _, err := mustRun(t, w, 1, q1.Put([]byte("a"))); err != nil {
					t.Fatal(err)
				}
				if _, err := mustRun(t, w, 1, q1.Take()); err != nil {
					t.Fatal(err)
				}
			}
			tf := sim.Submit(w, 0, c.Queue().Take())
			var got *queue.Item
			var blockingErr error
			blockingDone := false
			w.Go(0, func(a *sim.Actor) {
				got, blockingErr = c.Take(a.Context())
				blockingDone = true
			})
			w.Drive()
			tc, err := cache.NewTree(dir, cache.WithRecursive())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 0, tc.Start()); err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 0, tc.Stop()); err != nil {
				t.Fatal(err)
			}
			if mode == queue.AtLeastOnce {
				if _, err := mustRun(t, w, 0, task.RemoveWatches(dir+".consumers", task.WatcherAny)); err != nil {
					t.Fatalf("RemoveWatches on the markers' directory: %v", err)
				}
			}
			settleFor(w, 10*time.Second)
			if tf.Done || blockingDone {
				t.Fatalf("the Takes ended on an empty queue after another user of the session removed the watches on %s: task face %+v, Client %v (done %v)",
					dir, tf, blockingErr, blockingDone)
			}
			if mode == queue.AtLeastOnce {
				w.Server.Expire(w.Conns[1]) // "a" comes back
				w.Drive()
			} else if _, err := mustRun(t, w, 1, q1.Put([]byte("a"))); err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 1, q1.Put([]byte("b"))); err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool { return tf.Done && blockingDone }) || tf.Err != nil || blockingErr != nil {
				t.Fatalf("the Takes after a and b: task face %+v, Client %v %v (done %v)", tf, got, blockingErr, blockingDone)
			}
			if s := string(tf.V.Data) + string(got.Data); s != "ab" && s != "ba" {
				t.Fatalf("taken %q and %q", tf.V.Data, got.Data)
			}
		})
	}
}

package queue_test

import (
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/recipes/queue"
)

// A long-lived session's memory is flat however many items it moves:
// memcheck.Cycles put/take cycles (and, at-least-once, acks) on one
// session leave the live scope count under the session where it was after
// the warm-up, and the live heap within memcheck.Bound of it. The take
// that finds the queue empty and waits on a watch is part of each cycle
// (it is started before the put): its watch fires with the put and
// nothing of it stays.
func TestMemoryFlatPutTake(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newWorld(t, 1)
			q := mustNew(t, "/mem/q", queue.WithMode(mode))
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(i int) {
				out := sim.Submit(w, 0, q.Take())
				w.Drive()
				if _, err := mustRun(t, w, 0, q.Put(fmt.Appendf(nil, "%d", i))); err != nil {
					t.Fatal(err)
				}
				w.Drive()
				if !out.Done || out.Err != nil {
					t.Fatalf("take: %+v", out)
				}
				if mode == queue.AtLeastOnce {
					if _, err := mustRun(t, w, 0, out.V.Ack()); err != nil {
						t.Fatal(err)
					}
				}
			})
			if n := len(w.Children("/mem/q")); n != 0 {
				t.Fatalf("%d items left", n)
			}
			if len(w.Errs) > 0 {
				t.Fatalf("reported errors: %v", w.Errs)
			}
		})
	}
}

// At-least-once with a second consumer alive and holding an item: a take
// that waits on an empty queue also watches the other consumer's marker
// (its death would return the item). A watch that has not fired serves the next wait again,
// so cycles of waiting takes on one session do not pile up watches on
// the other's marker (memcheck's heap bound would see them: each is kept
// by the server and the client until it fires).
func TestMemoryFlatWaitingBesideAnotherConsumer(t *testing.T) {
	w := newWorld(t, 2)
	qa := mustNew(t, "/mem/q", queue.WithMode(queue.AtLeastOnce))
	qb := mustNew(t, "/mem/q", queue.WithMode(queue.AtLeastOnce))
	// b takes an item and holds it, unacknowledged, for the whole test:
	// every wait of a's watches b's marker.
	if _, err := mustRun(t, w, 1, qb.Put([]byte("b"))); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, qb.Take()); err != nil {
		t.Fatal(err)
	}
	memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(i int) {
		out := sim.Submit(w, 0, qa.Take())
		w.Drive()
		if out.Done {
			t.Fatalf("take on an empty queue ended: %+v", out)
		}
		if _, err := mustRun(t, w, 1, qb.Put(fmt.Appendf(nil, "%d", i))); err != nil {
			t.Fatal(err)
		}
		w.Drive()
		if !out.Done || out.Err != nil {
			t.Fatalf("take: %+v", out)
		}
		if _, err := mustRun(t, w, 0, out.V.Ack()); err != nil {
			t.Fatal(err)
		}
	})
}

package lock_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
)

// A long-lived session's memory is flat however many locks it takes:
// memcheck.Cycles acquire/release cycles on one session leave the live
// scope count under the session scope where it was after the warm-up, and
// the live heap within memcheck.Bound of it. Measured both for a holder
// that never asks whether it still holds the lock (no node watch: the
// lock's monitor scope must still be closed at release) and for one that
// asks (IsHeld, Done and Err set the watch on the lock node, which the
// release must end), and for attempts that time out behind a holder.
func TestMemoryFlatAcquireRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		ask  bool
	}{{"unwatched", false}, {"watched", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := newWorld(t, 1, 1, fakezk.Config{})
			l := mustLock(t, "/mem/lock")
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(i int) {
				h, err := mustRun(t, w, 0, l.Acquire())
				if err != nil {
					t.Fatal(err)
				}
				if tc.ask {
					w.Drive() // the watch is set
					if !h.IsHeld() || h.Err() != nil || isClosed(h.Done()) {
						t.Fatal("fresh lock not held")
					}
				}
				if _, err := mustRun(t, w, 0, h.Release()); err != nil {
					t.Fatal(err)
				}
			})
			noReportedErrors(t, w)
		})
	}
	// An attempt that times out behind another holder: its contender
	// node is deleted by a cleanup flow, and nothing of it stays. The
	// holder releases in each cycle, which fires the exists watch the
	// attempt left on its node: a watch is kept (by the server, and by
	// go-zookeeper on the client) until it fires, so attempts that time
	// out behind one holder keep one watch each, about 2 KiB, until that
	// holder's node goes.
	t.Run("timeout", func(t *testing.T) {
		w, _ := newWorld(t, 1, 2, fakezk.Config{})
		l := mustLock(t, "/mem/lock")
		memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
			h, err := mustRun(t, w, 1, l.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 0, c.Timeout(l.Acquire(), time.Second)); !errors.Is(err, task.ErrDeadlineExceeded) {
				t.Fatalf("acquire behind a holder: %v", err)
			}
			w.Drive() // the cleanup
			if _, err := mustRun(t, w, 1, h.Release()); err != nil {
				t.Fatal(err)
			}
		})
		if got := w.Children("/mem/lock"); len(got) != 0 {
			t.Fatalf("contenders left: %v", got)
		}
		noReportedErrors(t, w)
	})
	// A contended handoff by mark: client 0 waits behind client 2, which
	// waits behind client 1; client 2 holds after waiting and marks its
	// node, client 0 sees the mark, holds when client 2 releases, and
	// marks its own node. Nothing of the mark or of the two watches on
	// the predecessor stays.
	t.Run("handoff", func(t *testing.T) {
		w, _ := newWorld(t, 1, 3, fakezk.Config{})
		l := mustLock(t, "/mem/lock")
		memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
			h1, err := mustRun(t, w, 1, l.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			o2 := sim.Submit(w, 2, l.Acquire())
			w.Drive()
			o0 := sim.Submit(w, 0, l.Acquire())
			w.Drive()
			if _, err := mustRun(t, w, 1, h1.Release()); err != nil {
				t.Fatal(err)
			}
			w.Drive()
			if !o2.Done || o2.Err != nil || o0.Done {
				t.Fatalf("after client 1 released: client 2 %+v, client 0 %+v", o2, o0)
			}
			if _, err := mustRun(t, w, 2, o2.V.Release()); err != nil {
				t.Fatal(err)
			}
			w.Drive()
			if !o0.Done || o0.Err != nil {
				t.Fatalf("client 0 after client 2 released: %+v", o0)
			}
			if _, err := mustRun(t, w, 0, o0.V.Release()); err != nil {
				t.Fatal(err)
			}
		})
		noReportedErrors(t, w)
	})
}

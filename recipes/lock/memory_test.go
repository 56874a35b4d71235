package lock_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"

	"github.com/zkflow/zkflow/fakezk"
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
}

package lock_test

import (
	"testing"

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
// release must end).
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
}

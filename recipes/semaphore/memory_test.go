package semaphore_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many leases it takes:
// memcheck.Cycles acquire/return cycles on one session leave the live
// scope count under the session scope where it was after the warm-up, and
// the live heap within memcheck.Bound of it. Measured for a holder that
// never asks whether it still holds its lease (no node watch: the lease's
// monitor scope, and the internal lock's, must still be closed), for one
// that asks (the watch on the lease node must end with the release), and
// for attempts that time out behind a holder (their lease node and
// internal lock are withdrawn by a cleanup flow).
func TestMemoryFlatAcquireRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		ask  bool
	}{{"unwatched", false}, {"watched", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := newWorld(t, 1, 1)
			m := mustSem(t, "/mem/sem", 2)
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
				l, err := mustRun(t, w, 0, m.Acquire())
				if err != nil {
					t.Fatal(err)
				}
				if tc.ask {
					w.Drive() // the watch is set
					if !l.IsHeld() || l.Err() != nil || isClosed(l.Done()) {
						t.Fatal("fresh lease not held")
					}
				}
				if _, err := mustRun(t, w, 0, l.Release()); err != nil {
					t.Fatal(err)
				}
			})
			noReportedErrors(t, w)
		})
	}
	t.Run("timeout", func(t *testing.T) {
		w, _ := newWorld(t, 1, 2)
		m := mustSem(t, "/mem/sem", 1)
		memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
			l, err := mustRun(t, w, 1, m.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 0, c.Timeout(m.Acquire(), time.Second)); !errors.Is(err, task.ErrDeadlineExceeded) {
				t.Fatalf("acquire behind a holder: %v", err)
			}
			w.Drive() // the cleanup
			if _, err := mustRun(t, w, 1, l.Release()); err != nil {
				t.Fatal(err)
			}
		})
		if got := w.Children("/mem/sem/leases"); len(got) != 0 {
			t.Fatalf("lease nodes left: %v", got)
		}
		noReportedErrors(t, w)
	})
}

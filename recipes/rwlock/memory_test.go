package rwlock_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many locks it takes:
// memcheck.Cycles cycles on one session leave the live scope count under
// the session scope where it was after the warm-up, and the live heap
// within memcheck.Bound of it. Measured for a reader and a writer taking
// turns, each asking whether it holds (IsHeld sets the watch on its node,
// which the release must end), and for readers that time out behind a
// writer (their node is deleted by a cleanup flow).
func TestMemoryFlat(t *testing.T) {
	t.Run("read-write", func(t *testing.T) {
		w, _ := newWorld(t, 1)
		l := mustLock(t, "/mem/rw")
		memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(i int) {
			acquire := l.AcquireRead()
			if i%2 == 0 {
				acquire = l.Acquire()
			}
			h, err := mustRun(t, w, 0, acquire)
			if err != nil {
				t.Fatal(err)
			}
			w.Drive()
			if !h.IsHeld() {
				t.Fatal("fresh lock not held")
			}
			if _, err := mustRun(t, w, 0, h.Release()); err != nil {
				t.Fatal(err)
			}
		})
		noReportedErrors(t, w)
	})
	t.Run("timeout", func(t *testing.T) {
		w, _ := newWorld(t, 2)
		l := mustLock(t, "/mem/rw")
		memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
			h, err := mustRun(t, w, 1, l.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 0, c.Timeout(l.AcquireRead(), time.Second)); !errors.Is(err, task.ErrDeadlineExceeded) {
				t.Fatalf("reader behind a writer: %v", err)
			}
			w.Drive() // the cleanup
			if _, err := mustRun(t, w, 1, h.Release()); err != nil {
				t.Fatal(err)
			}
		})
		if got := w.Children("/mem/rw"); len(got) != 0 {
			t.Fatalf("contenders left: %v", got)
		}
		noReportedErrors(t, w)
	})
}

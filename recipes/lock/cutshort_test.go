package lock_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// A release whose deletes two server restarts take (not applied: the
// client hears connection loss at once and cannot reconnect while the
// server is down, 2s each time), run under a deadline of 3s that passes
// while its retry waits for the second reconnect, still deletes the node
// once the client is back, on the same session: the caller gets the
// deadline's error, the delete goes on in the background. Both ways a
// release deletes: the first delete sent by hand (its loss is handled
// after the first reconnect, the scope still live) and then Detached's
// retry, and (a node past zkops.ResetAbove) Detached from the start. With
// zkops/withdraw-cut-cleanup switched back on the node stays for the
// session's life, as it did before the fix (semaphore/blocking seed
// 198752752005405): the test checks that it would catch it.
func TestReleaseCutShortByDeadlineStillDeletes(t *testing.T) {
	for _, exhausted := range []bool{false, true} {
		for _, bug := range []bool{false, true} {
			t.Run(fmt.Sprintf("exhausted=%v/bug=%v", exhausted, bug), func(t *testing.T) {
				if bug {
					restore := canary.Enable(zkops.BugWithdrawCutCleanup)
					defer restore()
				}
				cut := &restartOnDelete{}
				w, err := sim.New(sim.Config{Seed: 7, Clients: 1, Wrap: func(_ int, conn *fakezk.Conn) task.Conn {
					cut.Conn = conn
					return cut
				}})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				cut.w = w
				const dir = "/locks/cut"
				for _, p := range []string{"/locks", dir} {
					if _, err := sim.Run(w, 0, task.Create(p, nil, task.Persistent)); err != nil {
						t.Fatal(err)
					}
				}
				if exhausted {
					if err := w.Server.SetCounters(dir, 0, math.MaxInt32-1); err != nil {
						t.Fatal(err)
					}
				}
				l := mustLock(t, dir)
				h, err := sim.Run(w, 0, l.Acquire())
				if err != nil {
					t.Fatal(err)
				}
				if got := h.Seq() >= zkops.ResetAbove; got != exhausted {
					t.Fatalf("sequence %d past ResetAbove: %v, want %v", h.Seq(), got, exhausted)
				}
				sess := w.Conns[0].SessionID()
				cut.path = h.Path()
				_, err = sim.Run(w, 0, c.Timeout(h.Release(), 3*time.Second))
				if cut.cuts != 2 {
					t.Fatalf("the release's deletes were cut %d times, want 2", cut.cuts)
				}
				if !errors.Is(err, task.ErrDeadlineExceeded) {
					t.Fatalf("Release under a deadline that passed in the outage = %v, want ErrDeadlineExceeded", err)
				}
				until := w.Clock.Now().Add(10 * time.Second)
				exists := func() bool { _, ok := w.Server.NodeStat(h.Path()); return ok }
				w.Settle(func() bool { return !exists() || !w.Clock.Now().Before(until) })
				if got := w.Conns[0].SessionID(); got != sess {
					t.Fatalf("session %x, was %x: the test needs the session to live", got, sess)
				}
				switch {
				case bug && !exists():
					t.Error("with the canary on, the node was deleted all the same: this test would not catch the bug")
				case !bug && exists():
					t.Errorf("%s still there 10s after the release, its session alive: the cut-short delete never ran again (client errors %v)", h.Path(), w.Errs)
				}
			})
		}
	}
}

// restartOnDelete restarts the server, down for 2s, just after its
// client sends each of the first two deletes of path (once path is set).
type restartOnDelete struct {
	*fakezk.Conn
	w    *sim.World
	path string
	cuts int
}

func (r *restartOnDelete) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	r.Conn.Do(req, done, watch)
	if r.path != "" && r.cuts < 2 && sim.Deletes(r.path)(req) {
		r.cuts++
		r.w.Server.Restart(2 * time.Second)
	}
}

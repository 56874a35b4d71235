package masterworker_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// A handler that stops its worker with task.ErrSessionExpired or
// task.ErrClosed while the worker's own session lives (the handler's
// error comes from something else it uses: another ensemble's session,
// an executor of its own that was closed) stops the worker as the
// Handler's doc says, and Run, whose session lives, gives the
// registration up (Run's and Serve's docs): the primary moves the job
// back at once and another worker runs it. Before, Run took the error
// for the end of its own session and kept the registration: the
// primary took the worker for live and left the job assigned to it
// for as long as the session lived, and the next jobs went to it too.
func TestHandlerStoppingWithASessionErrorGivesTheRegistrationUp(t *testing.T) {
	for _, stop := range []error{task.ErrSessionExpired, task.ErrClosed} {
		t.Run(stop.Error(), func(t *testing.T) {
			w := newWorld(t, 4, nil)
			sys := newSys(t, "/mw")
			m, _ := sys.Master("m")
			w1, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] {
				return task.Fail[[]byte](stop)
			})
			w2, _ := sys.Worker("w2", func(j masterworker.Job) task.Task[[]byte] {
				return task.Value(j.Data)
			})
			mo := sim.Submit(w, 0, m.Run())
			o1 := sim.Submit(w, 1, w1.Run())
			if !w.Settle(func() bool { return m.Primary() && w1.Registered() }) {
				t.Fatal("no primary, or w1 never registered")
			}
			// w1 is the only worker: the job is its.
			name, err := sim.Run(w, 3, sys.Submit("c_1", []byte("x")))
			if err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool { return o1.Done }) {
				t.Fatal("w1's Run never ended")
			}
			if !errors.Is(o1.Err, stop) {
				t.Fatalf("w1's Run = %v, want the handler's %v", o1.Err, stop)
			}
			o2 := sim.Submit(w, 2, w2.Run())
			res, err := sim.Run(w, 3, c.Deadline(sys.Wait(name), w.Clock.Now().Add(time.Minute)))
			if err != nil || string(res.Data) != "x" {
				t.Errorf("Wait(%s) = %+v, %v; want w2's run of it: the job stayed with w1, which no longer serves", name, res, err)
			}
			if st, ok := w.NodeStat(sys.WorkersPath() + "/w1"); ok && st.EphemeralOwner == w.Conns[1].SessionID() {
				t.Errorf("w1's registration left in place by a Run that ended while its session lives")
			}
			if mo.Done || o2.Done {
				t.Errorf("the master (%+v) or w2 (%+v) ended", mo, o2)
			}
		})
	}
}

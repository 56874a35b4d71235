package masterworker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// A worker whose run is canceled while it executes a task (its Serve's
// ctx ends), and which is served again at once on the same executor and
// session (a process that restarts its serving loop; or Worker.Run run
// again by hand). The canceled run gives its registration up by a flow
// of its own; here that flow's first read (sync, exists) is lost with the
// connection, so after the reconnect its retry races with the new run's
// registration. The new run finds the node there, ours, and adopts it;
// a give-up that reads it after that deletes it, and the primary then
// moves the task the new run is executing to another worker (w2, which
// comes up meanwhile): both run it to its end, and the new run's status
// is dropped, while it registers again. The new run must wait for the
// give-up: the registration it holds is never deleted under it, and the
// task is run to its end once. Each seed draws the two retries' backoffs;
// before the fix about half the seeds lost the new run's registration.
func TestWorkerServedAgainKeepsItsRegistration(t *testing.T) {
	for _, serve := range []bool{false, true} {
		t.Run(fmt.Sprintf("serve=%v", serve), func(t *testing.T) {
			cuts := 0
			for seed := uint64(1); seed <= 24; seed++ {
				t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
					if servedAgain(t, seed, serve) {
						cuts++
					}
				})
			}
			if cuts == 0 {
				t.Error("the give-up's read was never cut: the test checks nothing")
			}
		})
	}
}

// regConn calls onReq with each request client 1 sends, then sends it.
type regConn struct {
	task.Conn
	onReq func(req task.Request)
}

func (r *regConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	r.onReq(req)
	r.Conn.Do(req, done, watch)
}

// servedAgain runs one seed, the worker served again through Serve (a
// simulated process's goroutine) or through Run (the task face), and
// reports whether the give-up's read was cut.
func servedAgain(t *testing.T, seed uint64, serve bool) bool {
	sys := newSys(t, "/mw")
	reg := sys.WorkersPath() + "/w1"
	var w *sim.World
	// The give-up's read (DeleteOwned syncs the path first) is cut off,
	// unapplied, for a third of the session timeout.
	cut := &sim.Cutter{Match: func(req task.Request) bool {
		r, ok := req.(*task.SyncRequest)
		return ok && r.Path == reg
	}}
	var wk1 *masterworker.Worker
	again := false    // the worker is being served again
	deletedUnder := 0 // deletes of the registration sent while the new run holds it
	creates := 0      // creates of the registration by the new run
	wrap := func(i int, conn *fakezk.Conn) task.Conn {
		if i != 1 {
			return conn
		}
		return &regConn{Conn: cut.Wrap(conn), onReq: func(req task.Request) {
			if !again {
				return
			}
			switch r := req.(type) {
			case *task.DeleteRequest:
				if r.Path == reg && wk1.Registered() {
					deletedUnder++
				}
			case *task.CreateRequest:
				if r.Path == reg {
					creates++
				}
			}
		}}
	}
	w, err := sim.New(sim.Config{Seed: seed, Clients: 4, Wrap: wrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	cut.World = w
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}

	// The handler takes a second of the clock; ends[name] counts its runs
	// that went to their end (the canceled one does not).
	ends := map[string]int{}
	var stopFirst func() // ends the first run's scope (Serve's ctx)
	firstStarted := false
	var wk2 *masterworker.Worker
	handler := func(j masterworker.Job) task.Task[[]byte] {
		return func(s *task.Scope, k task.Cont[[]byte]) {
			if !firstStarted {
				// The first run executes the task: its scope ends now,
				// its give-up's read will be cut, and a second worker
				// comes up.
				firstStarted = true
				cut.Armed = true
				stopFirst()
				executor.Submit(w.Execs[2], wk2.Run(), func(task.Unit, error) {})
			}
			task.Run(s, c.Sleep(time.Second), func(_ task.Unit, err error) {
				if err != nil {
					k(nil, err)
					return
				}
				ends[j.Name]++
				k(j.Data, nil)
			})
		}
	}
	wk1, _ = sys.Worker("w1", handler)
	wk2, _ = sys.Worker("w2", handler)
	m, _ := sys.Master("m")
	mo := sim.Submit(w, 0, m.Run())
	secondEnded := false
	if serve {
		var cancelFirst context.CancelFunc
		a := w.Go(1, func(a *sim.Actor) {
			ctx, cancel := context.WithCancel(a.Context())
			defer cancel()
			cancelFirst = cancel
			if err := wk1.Serve(ctx, w.Execs[1]); !errors.Is(err, task.ErrCanceled) {
				t.Errorf("first Serve = %v, want canceled", err)
			}
			// Served again at once on the same executor and session.
			again = true
			if err := wk1.Serve(a.Context(), w.Execs[1]); a.Context().Err() == nil {
				t.Errorf("second Serve ended: %v", err)
			}
			secondEnded = true
		})
		// The handler runs in a job of the world's goroutine.
		stopFirst = func() { w.Interrupt(a, cancelFirst) }
	} else {
		var first *executor.Flow
		first = executor.Submit(w.Execs[1], wk1.Run(), func(_ task.Unit, err error) {
			if !errors.Is(err, task.ErrCanceled) {
				t.Errorf("first Run = %v, want canceled", err)
			}
			// Run again at once on the same executor and session.
			again = true
			executor.Submit(w.Execs[1], wk1.Run(), func(task.Unit, error) { secondEnded = true })
		})
		stopFirst = first.Cancel
	}
	if !w.Settle(func() bool { return m.Primary() && wk1.Registered() }) {
		t.Fatal("no primary, or w1 never registered")
	}
	name, err := sim.Run(w, 3, sys.Submit("c_1", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(w, 3, sys.Wait(name))
	if err != nil || string(res.Data) != "x" {
		t.Fatalf("Wait(%s) = %+v, %v", name, res, err)
	}
	// Every handler under way ends.
	end := w.Clock.Now().Add(5 * time.Second)
	w.Settle(func() bool { return !w.Clock.Now().Before(end) })
	if !cut.Cut || !again {
		return false
	}
	st, ok := w.NodeStat(reg)
	ours := ok && st.EphemeralOwner == w.Conns[1].SessionID()
	if deletedUnder > 0 {
		t.Errorf("the first run's give-up deleted the registration the run served again held (%d times); it registered again (creates %d)", deletedUnder, creates)
	}
	if ends[name] != 1 {
		t.Errorf("%s run to its end %d times, want 1: the primary moved it away from the run served again while it ran it", name, ends[name])
	}
	if secondEnded || mo.Done {
		t.Errorf("the run served again (ended %v) or the master (%+v) ended", secondEnded, mo)
	}
	if !wk1.Registered() || !ours {
		t.Errorf("w1 not registered at the end: Registered %v, node ours %v", wk1.Registered(), ours)
	}
	return true
}

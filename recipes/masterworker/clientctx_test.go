package masterworker_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// Client.Submit's promise, "a task is never submitted twice", checked
// with the caller's context ending at every step of the call (k steps of
// the world after it starts), alone and with the session ending under
// the call: cut off past its timeout right after its j-th request, with
// that request applied or not (the submission is looked for on the next
// session before it is made again). Whatever the point: the submission
// has at most one task; Submit returns either its name (and the task is
// run) or the context's error; and the same Client's next Submit is a
// new submission.
func TestClientSubmitContextEndsAtEveryStep(t *testing.T) {
	var n [2]int                // Submits that returned a name, the context's error
	for k := -1; k <= 24; k++ { // -1: a context that does not end
		for j := -1; j <= 10; j++ {
			for _, applied := range []bool{false, true} {
				if j < 0 && applied {
					continue
				}
				t.Run(fmt.Sprintf("cancel%d/expire%d/applied=%v", k, j, applied), func(t *testing.T) {
					if submitEndsAt(t, k, j, applied) {
						n[0]++
					} else {
						n[1]++
					}
				})
			}
		}
	}
	t.Logf("%d Submits returned a name, %d the context's error", n[0], n[1])
	if n[0] == 0 || n[1] == 0 {
		t.Error("the context never ended during Submit, or always did: the steps drawn miss the call")
	}
}

// submitEndsAt runs one case and reports whether Submit returned a name.
func submitEndsAt(t *testing.T, k, j int, applied bool) bool {
	var w *sim.World
	sent := 0
	wrap := func(i int, conn *fakezk.Conn) task.Conn {
		if i != 2 || j < 0 {
			return conn
		}
		return &afterConn{Conn: conn, sent: func() {
			if sent++; sent == j+1 {
				w.Server.Partition(conn, 3*w.Timeout(), applied) // the server expires the session meanwhile
			}
		}}
	}
	w, sys := setupWorld(t, sim.Config{Seed: uint64(100*k + j + 2), Clients: 3, Wrap: wrap})
	m, _ := sys.Master("m")
	executor.Submit(w.Execs[0], m.Run(), func(task.Unit, error) {})
	wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	executor.Submit(w.Execs[1], wk.Run(), func(task.Unit, error) {})
	w.Drive()

	var name string
	var subErr, ctxErr error
	ended := false
	w.Go(2, func(a *sim.Actor) {
		cl, err := sys.NewClient(a.Exec(), "c")
		if err != nil {
			subErr, ended = err, true
			return
		}
		ctx, cancel := a.CancelAfterSteps(a.Context(), k)
		if k < 0 {
			ctx, cancel = a.WithCancel(a.Context())
		}
		defer cancel()
		name, subErr = cl.Submit(ctx, []byte("x"))
		ctxErr = ctx.Err()
		if subErr == nil || ctxErr != nil {
			// The next submission of this Client is another one.
			next, err := cl.Submit(a.Context(), []byte("y"))
			if err != nil || !clientTask(next, 2) {
				t.Errorf("the next Submit: %q, %v", next, err)
			}
		}
		ended = true
	})
	if !w.Settle(func() bool { return ended }) {
		t.Fatalf("Submit never returned")
	}
	switch {
	case subErr == nil:
	case ctxErr != nil && (errors.Is(subErr, task.ErrCanceled) || errors.Is(subErr, task.ErrDeadlineExceeded)):
	default:
		t.Fatalf("Submit: %v (its context: %v)", subErr, ctxErr)
	}
	tasks := func() []string {
		var found []string
		dirs := []string{sys.TasksPath(), sys.StatusRoot()}
		for _, a := range w.Children(sys.AssignRoot()) {
			dirs = append(dirs, sys.AssignRoot()+"/"+a)
		}
		for _, d := range dirs {
			for _, n := range w.Children(d) {
				if clientTask(n, 1) {
					found = append(found, d+"/"+n)
				}
			}
		}
		return found
	}
	// Every task submitted is run: its status is made.
	w.Settle(func() bool {
		for _, p := range tasks() {
			if !strings.HasPrefix(p, sys.StatusRoot()+"/") {
				return false
			}
		}
		return true
	})
	found := tasks()
	if len(found) > 1 {
		t.Fatalf("submission c_1 has %d tasks: %v (Submit: %q, %v)", len(found), found, name, subErr)
	}
	if subErr == nil && (len(found) != 1 || found[0] != sys.StatusRoot()+"/"+name) {
		t.Fatalf("Submit returned %q but the tasks of c_1 are %v", name, found)
	}
	return subErr == nil
}

// setupWorld returns a world made with cfg (closed when t ends) and a
// system at /mw set up on it.
func setupWorld(t *testing.T, cfg sim.Config) (*sim.World, *masterworker.System) {
	t.Helper()
	w, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	sys, _ := masterworker.New("/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	return w, sys
}

// afterConn calls sent after each request it passes on.
type afterConn struct {
	*fakezk.Conn
	sent func()
}

func (h *afterConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	h.Conn.Do(req, done, watch)
	h.sent()
}

// Master.Serve and Worker.Serve give back what they hold however their
// context ends (at every step k of the world after they start): once
// Serve has returned, the master's node is no longer its own (the backup
// takes it) and the worker's registration is gone, long before their
// sessions would end.
func TestServeContextEndsAtEveryStep(t *testing.T) {
	primaries := 0
	for k := 0; k <= 30; k++ {
		t.Run(fmt.Sprintf("cancel%d", k), func(t *testing.T) {
			w, sys := setupWorld(t, sim.Config{Seed: uint64(k + 1), Clients: 3})
			m, _ := sys.Master("m0")
			wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
			served := 0
			wasPrimary := false
			serve := func(i int, run func(context.Context) error) {
				w.Go(i, func(a *sim.Actor) {
					ctx, cancel := a.CancelAfterSteps(a.Context(), k)
					defer cancel()
					if err := run(ctx); !errors.Is(err, task.ErrCanceled) {
						t.Errorf("client %d: Serve: %v, want canceled", i, err)
					}
					served++
				})
			}
			serve(0, func(ctx context.Context) error {
				err := m.Serve(ctx, w.Execs[0])
				wasPrimary = m.Primary() || wasPrimary
				return err
			})
			serve(2, func(ctx context.Context) error { return wk.Serve(ctx, w.Execs[2]) })
			w.Settle(func() bool { return m.Primary() || served == 2 })
			wasPrimary = wasPrimary || m.Primary()
			if wasPrimary {
				primaries++
			}
			backup, _ := sys.Master("m1")
			executor.Submit(w.Execs[1], backup.Run(), func(task.Unit, error) {})
			if !w.Settle(func() bool { return served == 2 }) {
				t.Fatal("Serve did not return")
			}
			sess0 := w.Conns[0].SessionID()
			gone := func() bool {
				st, held := w.NodeStat(sys.MasterPath())
				_, registered := w.NodeStat(sys.WorkersPath() + "/w")
				return (!held || st.EphemeralOwner != sess0) && !registered
			}
			// Within a round trip, not a session timeout.
			start := w.Clock.Now()
			w.Settle(func() bool { return gone() || w.Clock.Now().Sub(start) > w.Timeout()/2 })
			if !gone() {
				st, _ := w.NodeStat(sys.MasterPath())
				t.Fatalf("after Serve returned: master node owned by %x (the returned master's session %x), workers %v",
					st.EphemeralOwner, sess0, w.Children(sys.WorkersPath()))
			}
		})
	}
	if primaries == 0 {
		t.Error("the master was never primary when its context ended: the steps drawn miss the mastership")
	}
}

// clientTask reports whether name is a task of Client "c"'s submission
// n: task-c_<session><random>_<n>-<sequence>.
func clientTask(name string, n int) bool {
	return regexp.MustCompile(fmt.Sprintf(`^task-c_[0-9a-f]{24}_%d-[0-9]{10}$`, n)).MatchString(name)
}

// A Client made again with the id of one before it (a process started
// again with its host name, or a second Client of the id) makes
// submissions of its own: when its first create is lost before the
// server applies it, its Submit does not take the earlier Client's task
// for its own, and Do answers with its own task's status. With the ids
// of before (the Client's id and a counter: the canary), it answers with
// the earlier Client's status.
func TestClientMadeAgainWithTheID(t *testing.T) {
	for _, again := range []int{2, 3} { // the same process, another one
		t.Run(fmt.Sprintf("client%d", again), func(t *testing.T) {
			if got := clientMadeAgain(t, again); got != "second" {
				t.Errorf("the second Client's Do answered %q: the first Client's task taken for its own", got)
			}
		})
		t.Run(fmt.Sprintf("client%d/canary", again), func(t *testing.T) {
			defer canary.Enable(masterworker.BugClientCounterOnly)()
			if got := clientMadeAgain(t, again); got != "first" {
				t.Errorf("with the ids of before, the second Client's Do answered %q, want the first Client's \"first\"", got)
			}
		})
	}
}

// clientMadeAgain runs TestClientMadeAgainWithTheID's schedule, the
// second Client on client again's executor (2: the first's), and returns
// what the second Client's Do answered.
func clientMadeAgain(t *testing.T, again int) string {
	t.Helper()
	var drop *dropFirst
	wrap := func(i int, conn *fakezk.Conn) task.Conn {
		if i != again {
			return conn
		}
		drop = &dropFirst{Conn: conn, prefix: "/mw/tasks/", dropped: true, unapplied: true} // armed below
		return drop
	}
	w, sys := setupWorld(t, sim.Config{Seed: 11, Clients: 4, Wrap: wrap})
	drop.srv = w.Server
	m, _ := sys.Master("m")
	executor.Submit(w.Execs[0], m.Run(), func(task.Unit, error) {})
	wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	executor.Submit(w.Execs[1], wk.Run(), func(task.Unit, error) {})
	w.Drive()
	var first, second masterworker.Result
	var err1, err2 error
	secondDo := func(a *sim.Actor) {
		drop.dropped = false // the next create under /mw/tasks is lost, not applied
		cl, _ := sys.NewClient(a.Exec(), "client-1")
		second, err2 = cl.Do(a.Context(), []byte("second"))
	}
	done := 0
	w.Go(2, func(a *sim.Actor) {
		defer func() { done++ }()
		cl, _ := sys.NewClient(a.Exec(), "client-1")
		first, err1 = cl.Do(a.Context(), []byte("first"))
		if again == 2 {
			secondDo(a)
		}
	})
	if !w.Settle(func() bool { return done == 1 }) {
		t.Fatal("Do never returned")
	}
	if again != 2 {
		w.Go(again, func(a *sim.Actor) {
			defer func() { done++ }()
			secondDo(a)
		})
		if !w.Settle(func() bool { return done == 2 }) {
			t.Fatal("the second Client's Do never returned")
		}
	}
	if !drop.dropped {
		t.Fatal("no create was lost: the test checks nothing")
	}
	if err1 != nil || string(first.Data) != "first" {
		t.Fatalf("first Do: %q, %v", first.Data, err1)
	}
	if err2 != nil {
		t.Fatalf("the second Client's Do: %v", err2)
	}
	return string(second.Data)
}

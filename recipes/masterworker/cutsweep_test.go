package masterworker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// Every write client 0 sends in one role, cut off with its reply lost
// (applied), the session back through a member that has not applied it,
// the call's deadline passing meanwhile (sim.CutSweep):
//
//   - submit: Submit of a task, then (its outcome unknown) Resubmit with
//     the same id, as the doc says;
//   - worker: a worker's Run (its assignment directory, its
//     registration, the status of a task the primary on client 1 gave
//     it, its give-up);
//   - master: a master's Run (the setup, its campaign, its moves, its
//     resign), alone or with client 1's master primary already.
//
// Then: client 0's live session leaves no node under the root; client
// 1's master and worker get every submitted task done; and each
// submission is one task, with one status.
func TestCutSweep(t *testing.T) {
	for _, role := range []string{"submit", "worker", "master", "master contended"} {
		t.Run(role, func(t *testing.T) {
			n := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return mwHistory(w, cut, role) }}.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

// The sweep catches a Find that lists without a sync: a Resubmit after a
// Submit whose reply was lost, back on the member that has not applied
// the create, does not find the task and submits it twice.
func TestCutSweepCatchesFindWithoutSync(t *testing.T) {
	defer canary.Enable("masterworker/find-without-sync")()
	err := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return mwHistory(w, cut, "submit") }}.Err()
	if err == nil {
		t.Fatal("with Find unsynced the sweep still passes")
	}
	t.Logf("with Find unsynced: %v", err)
}

// The blocking faces under the same sweep, each call in an actor of
// client 0 with a context that ends on the simulated clock (sim.CallIn):
//
//   - worker serve: Worker.Serve, client 1's master primary, its
//     context ending while client 0 is cut off, or ("outlasting") after
//     client 0 is back through the lagging member and serves there;
//   - master serve: Master.Serve, likewise, alone or with client 1's
//     master primary already;
//   - serve again: a Serve whose context ended served again at once on
//     the executor, while what the first gave up may still be under way
//     (the worker's ending while cut off, the master's after it is back
//     as primary);
//   - client submit: a Client's Submit, its context ending while client
//     0 is cut off (the task may or may not have been submitted);
//   - client do: a Client's Do outlasting the cut (its Submit settles
//     the lost reply itself), beside two Waits for a task submitted
//     before, one ending during the cut and one outlasting it; client
//     1's master and worker start once client 0 is cut off.
//
// Judged as the task face is, and on what the blocking face promises: a
// Serve returns its context's end, having given its role up (nothing of
// its live session is left, and client 1's master and worker then get
// every task done), and served again it serves (the worker registered,
// the master alone primary, near the end of its context); a Submit returns a task's name or its context's end;
// a Do or Wait that outlasts the cut returns the task's status, and one
// that does not returns it or its context's end; the Client goes on (a
// Do after the cut); every submission of client 0's Client is one task,
// with one status, whatever its call returned.
func TestCutSweepBlocking(t *testing.T) {
	sim.RunSweeps(t, blockingSweeps())
}

func blockingSweeps() map[string]sim.CutSweep {
	sweeps := map[string]sim.CutSweep{}
	for _, role := range []string{"worker serve", "worker serve outlasting", "master serve", "master serve outlasting",
		"master serve contended", "master serve contended outlasting", "worker serve again", "master serve outlasting again",
		"client submit", "client do"} {
		sweeps[role] = sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return mwHistory(w, cut, role) }}
	}
	return sweeps
}

// The blocking client's sweep catches a Find that lists without a sync: a
// Do whose Submit's reply was lost, back on the member that has not
// applied the create, does not find the task and submits it twice.
func TestCutSweepBlockingCatchesFindWithoutSync(t *testing.T) {
	defer canary.Enable("masterworker/find-without-sync")()
	if err := blockingSweeps()["client do"].Err(); err == nil {
		t.Fatal("with Find unsynced the blocking sweep still passes")
	} else {
		t.Logf("with Find unsynced: %v", err)
	}
}

func mwHistory(w *sim.World, cut *sim.Cutter, role string) error {
	const root = "/jobs"
	sys, err := masterworker.New(root)
	if err != nil {
		return err
	}
	echo := func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) }
	deadline := w.Timeout() / 6 // half the cut
	bound := 2 * time.Minute
	background := func(i int, t task.Task[task.Unit]) { sim.Submit(w, i, c.Timeout(t, time.Hour)) }
	m0, _ := sys.Master("m0")
	m1, _ := sys.Master("m1")
	w0, _ := sys.Worker("w0", echo)
	w1, _ := sys.Worker("w1", echo)
	ids := []string{"c1-pre"}
	if _, err := sim.Run(w, 1, sys.Submit("c1-pre", []byte("pre"))); err != nil {
		return fmt.Errorf("client 1's submit: %w", err)
	}
	master1, worker1 := false, false
	serve := strings.Contains(role, "serve")
	again := strings.HasSuffix(role, " again")
	outlasting := strings.HasSuffix(strings.TrimSuffix(role, " again"), " outlasting")
	switch strings.TrimSuffix(strings.TrimSuffix(role, " again"), " outlasting") {
	case "worker", "master contended", "worker serve", "master serve contended":
		background(1, m1.Run())
		master1 = true
		if !w.Settle(m1.Primary) {
			return fmt.Errorf("client 1's master never primary")
		}
	}
	var cl *masterworker.Client
	var nameA string
	if strings.HasPrefix(role, "client") {
		// A task submitted before the cut, not done until client 1's
		// master and worker start.
		if cl, err = sys.NewClient(w.Execs[0], "c0"); err != nil {
			return err
		}
		a := sim.CallIn(w, 0, bound, func(_ *sim.Actor, ctx context.Context) (string, error) { return cl.Submit(ctx, []byte("a")) })
		if nameA, err = settled(w, a); err != nil {
			return fmt.Errorf("client 0's first submit: %w", err)
		}
	}
	sess := w.Conns[0].SessionID()
	cut.Armed = true
	var what string
	var blockingErr error // what a blocking call returned against its promise
	switch {
	case serve:
		// Ending while client 0 is cut off (the cut lasts a third of the
		// session timeout), or after it is back through the lagging
		// member, which it serves through until then.
		d := deadline
		if outlasting {
			d = w.Timeout()
		}
		worker := strings.HasPrefix(role, "worker")
		serveFor := func(d time.Duration) *sim.Outcome[task.Unit] {
			return sim.CallIn(w, 0, d, func(a *sim.Actor, ctx context.Context) (task.Unit, error) {
				if worker {
					return task.Unit{}, w0.Serve(ctx, a.Exec())
				}
				return task.Unit{}, m0.Serve(ctx, a.Exec())
			})
		}
		o := serveFor(d)
		if _, err := settled(w, o); errors.Is(err, sim.ErrStuck) {
			return fmt.Errorf("%s: client 0's Serve never returned", role)
		}
		what = fmt.Sprintf("%s: %v", role, o.Err)
		if !errors.Is(o.Err, context.DeadlineExceeded) {
			blockingErr = fmt.Errorf("%s: Serve returned %v, not its context's end", what, o.Err)
			break
		}
		if again && cut.Cut {
			// Served again at once on the executor, while what the first
			// Serve gave up may still be under way: near the end of its
			// context the worker is registered (the give-up did not
			// delete the node of the Serve after it), the master alone
			// primary.
			d := 3 * w.Timeout()
			o := serveFor(d)
			var sampled, registered, primary, ended bool
			w.Go(1, func(a *sim.Actor) {
				if a.Sleep(a.Context(), d-w.Timeout()/10) == nil {
					st, ok := w.NodeStat(sys.WorkersPath() + "/" + w0.ID())
					sampled, registered, primary, ended = true, ok && st.EphemeralOwner == sess, m0.Primary(), o.Done
				}
			})
			if !w.Settle(func() bool { return o.Done && sampled }) {
				return fmt.Errorf("%s: client 0's second Serve never returned", what)
			}
			what += fmt.Sprintf("; served again: %v", o.Err)
			switch {
			case ended || !errors.Is(o.Err, context.DeadlineExceeded):
				blockingErr = fmt.Errorf("%s: Serve returned %v, not its context's end", what, o.Err)
			case worker && !registered:
				blockingErr = fmt.Errorf("%s: not registered near its context's end", what)
			case !worker && !strings.Contains(role, "contended") && !primary:
				blockingErr = fmt.Errorf("%s: alone, not primary near its context's end", what)
			}
		}
	case role == "client submit":
		o := sim.CallIn(w, 0, deadline, func(_ *sim.Actor, ctx context.Context) (string, error) { return cl.Submit(ctx, []byte("b")) })
		if _, err := settled(w, o); errors.Is(err, sim.ErrStuck) {
			return fmt.Errorf("client 0's Submit never returned")
		}
		what = fmt.Sprintf("client submit: %q, %v", o.V, o.Err)
		if o.Err != nil && !errors.Is(o.Err, context.DeadlineExceeded) {
			blockingErr = fmt.Errorf("%s: Submit returned neither a name nor its context's end", what)
		}
	case role == "client do":
		// Two Waits for a, one ending while client 0 is cut off, one
		// outlasting the cut, and a Do of c (its create the one cut)
		// outlasting it too; client 1's master and worker start once
		// client 0 is cut off.
		waitA := sim.CallIn(w, 0, deadline, func(_ *sim.Actor, ctx context.Context) (masterworker.Result, error) { return cl.Wait(ctx, nameA) })
		waitA2 := sim.CallIn(w, 0, bound, func(_ *sim.Actor, ctx context.Context) (masterworker.Result, error) { return cl.Wait(ctx, nameA) })
		doC := sim.CallIn(w, 0, bound, func(_ *sim.Actor, ctx context.Context) (masterworker.Result, error) { return cl.Do(ctx, []byte("c")) })
		ended := func() bool { return doC.Done && waitA.Done && waitA2.Done }
		w.Settle(func() bool { return cut.Cut || ended() })
		background(1, m1.Run())
		background(1, w1.Run())
		master1, worker1 = true, true
		if !w.Settle(ended) {
			return fmt.Errorf("client 0's calls never ended")
		}
		what = fmt.Sprintf("client do: %q, %v; wait a: %q, %v; wait a outlasting: %q, %v",
			doC.V.Data, doC.Err, waitA.V.Data, waitA.Err, waitA2.V.Data, waitA2.Err)
		switch {
		case doC.Err != nil || string(doC.V.Data) != "c":
			blockingErr = fmt.Errorf("%s: a Do outlasting the cut did not get its task's status", what)
		case waitA.Err != nil && !errors.Is(waitA.Err, context.DeadlineExceeded) || waitA.Err == nil && string(waitA.V.Data) != "a":
			blockingErr = fmt.Errorf("%s: Wait returned neither the status nor its context's end", what)
		case waitA2.Err != nil || string(waitA2.V.Data) != "a":
			blockingErr = fmt.Errorf("%s: a Wait outlasting the cut did not get the status", what)
		}
	}
	switch role {
	case "submit":
		ids = append(ids, "c0-a")
		name, err := sim.Run(w, 0, c.Timeout(sys.Submit("c0-a", []byte("a")), deadline))
		what = fmt.Sprintf("submit: %q, %v", name, err)
		if err != nil {
			// The outcome unknown: submit again with the same id.
			name, err = sim.Run(w, 0, c.Timeout(sys.Resubmit("c0-a", []byte("a")), bound))
			what += fmt.Sprintf("; resubmit: %q, %v", name, err)
			if err != nil {
				return fmt.Errorf("%s", what)
			}
		}
	case "worker":
		_, err := sim.Run(w, 0, c.Timeout(w0.Run(), deadline))
		what = fmt.Sprintf("worker: %v", err)
	case "master", "master contended":
		_, err := sim.Run(w, 0, c.Timeout(m0.Run(), deadline))
		what = fmt.Sprintf("master: %v", err)
	}
	if !cut.Cut {
		return nil
	}
	if blockingErr != nil {
		return blockingErr
	}
	if w.Conns[0].SessionID() != sess {
		return fmt.Errorf("%s: client 0's session ended: the history missed its schedule", what)
	}
	end := w.Clock.Now().Add(bound)
	left := func() []string { return w.Ephemerals(root, sess) }
	w.Settle(func() bool { return len(left()) == 0 || !w.Clock.Now().Before(end) })
	if l := left(); len(l) > 0 {
		return fmt.Errorf("%s: client 0 left %v of its live session for %s", what, l, bound)
	}
	if !master1 {
		background(1, m1.Run())
	}
	if !worker1 {
		background(1, w1.Run())
	}
	ids = append(ids, "c1-post")
	name, err := sim.Run(w, 1, sys.Submit("c1-post", []byte("post")))
	if err != nil {
		return fmt.Errorf("%s: client 1's submit after: %w", what, err)
	}
	if _, err := sim.Run(w, 1, c.Timeout(sys.Wait(name), bound)); err != nil {
		return fmt.Errorf("%s: client 1's task after never done: %w", what, err)
	}
	if cl != nil {
		// Client 0's Client goes on: a Do after the cut.
		res, err := settled(w, sim.CallIn(w, 0, bound, func(_ *sim.Actor, ctx context.Context) (masterworker.Result, error) { return cl.Do(ctx, []byte("d")) }))
		if err != nil || string(res.Data) != "d" {
			return fmt.Errorf("%s: client 0's Do after the cut: %q, %v", what, res.Data, err)
		}
		// Client 0's submissions (a, b if made, c, and any made twice).
		ids = append(ids, clientSubmissions(w, sys, "c0")...)
	}
	// Every submission is one task, done once.
	for _, id := range ids {
		prefix := "task-" + id + "-"
		var tasks, statuses []string
		// Until it has a status and is neither queued nor assigned (a
		// handler may still run it, or a copy of it).
		end := w.Clock.Now().Add(bound)
		w.Settle(func() bool {
			tasks, statuses = tasks[:0], statuses[:0]
			for _, n := range w.Children(sys.TasksPath()) {
				if strings.HasPrefix(n, prefix) {
					tasks = append(tasks, n)
				}
			}
			for _, a := range w.Children(sys.AssignRoot()) {
				for _, n := range w.Children(sys.AssignPath(a)) {
					if strings.HasPrefix(n, prefix) {
						tasks = append(tasks, a+"/"+n)
					}
				}
			}
			for _, n := range w.Children(sys.StatusRoot()) {
				if strings.HasPrefix(n, prefix) {
					statuses = append(statuses, n)
				}
			}
			return len(statuses) > 0 && len(tasks) == 0 || !w.Clock.Now().Before(end)
		})
		if len(statuses) != 1 || len(tasks) > 0 {
			return fmt.Errorf("%s: submission %s: statuses %v, tasks still queued or assigned %v: want one status", what, id, statuses, tasks)
		}
	}
	return nil
}

// settled runs o to its end; sim.ErrStuck if it never ends.
func settled[T any](w *sim.World, o *sim.Outcome[T]) (T, error) {
	if !w.Settle(func() bool { return o.Done }) {
		var zero T
		return zero, sim.ErrStuck
	}
	return o.V, o.Err
}

// clientSubmissions returns the ids of the submissions of the Client
// named client found in /tasks, /assign/* and /status, each once.
func clientSubmissions(w *sim.World, sys *masterworker.System, client string) []string {
	names := append(w.Children(sys.TasksPath()), w.Children(sys.StatusRoot())...)
	for _, a := range w.Children(sys.AssignRoot()) {
		names = append(names, w.Children(sys.AssignPath(a))...)
	}
	var ids []string
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, "task-"+client+"_")
		if !ok {
			continue
		}
		id := client + "_" + rest[:strings.LastIndexByte(rest, '-')]
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

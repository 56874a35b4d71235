package sim_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/task"
)

// The world does not step while an actor has the turn: a flow the actor
// submits has not run, however long the actor goes on, until the actor
// waits; and once its outcome is delivered the actor runs before the
// world goes on.
func TestActorLockstep(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 3, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ran := false
	var log []string
	w.Go(0, func(a *sim.Actor) {
		executor.Submit(a.Exec(), task.Task[task.Unit](task.Done), func(task.Unit, error) { ran = true })
		for range 1000 {
			runtime.Gosched() // the world's goroutine would run the flow now, if it stepped
		}
		if ran {
			log = append(log, "the world stepped while the actor ran")
		}
		if _, err := executor.Await(a.Context(), a.Exec(), task.Create("/x", nil, task.Persistent)); err != nil {
			log = append(log, "create: "+err.Error())
		}
		log = append(log, fmt.Sprintf("ran=%v", ran))
	})
	if !w.Settle(func() bool { return w.Actors() == 0 }) {
		t.Fatal("the actor never ended")
	}
	if got := strings.Join(log, "; "); got != "ran=true" {
		t.Fatalf("actor saw %q", got)
	}
	if _, ok := w.NodeStat("/x"); !ok {
		t.Fatal("/x not created")
	}
}

// Contexts end on the simulated clock (WithTimeout) and at a step
// (CancelAfterSteps), and a blocking call sees it; context.WithCancel of
// an actor's context ends with it.
func TestActorContexts(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 4, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var errs []error
	var elapsed time.Duration
	w.Go(0, func(a *sim.Actor) {
		start := w.Clock.Now()
		ctx, cancel := a.WithTimeout(a.Context(), 3*time.Second)
		defer cancel()
		inner, innerCancel := context.WithCancel(ctx)
		defer innerCancel()
		errs = append(errs, a.Sleep(inner, time.Minute))
		elapsed = w.Clock.Now().Sub(start)
		errs = append(errs, inner.Err())
		sctx, scancel := a.CancelAfterSteps(a.Context(), 0)
		defer scancel()
		_, err := executor.Await(sctx, a.Exec(), task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {})) // never ends
		errs = append(errs, err)
	})
	if !w.Settle(func() bool { return w.Actors() == 0 }) {
		t.Fatal("the actor never ended")
	}
	if len(errs) != 3 || !errors.Is(errs[0], context.DeadlineExceeded) || !errors.Is(errs[1], context.DeadlineExceeded) ||
		!errors.Is(errs[2], task.ErrCanceled) || elapsed != 3*time.Second {
		t.Fatalf("errors %v after %v", errs, elapsed)
	}
}

// A context's children end with it, with its error, however many
// children came and ended before them; a function given to its
// AfterFunc runs when it ends, unless stopped.
func TestActorContextChildren(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 4, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var live []context.Context
	var ran, stoppedRan bool
	w.Go(0, func(a *sim.Actor) {
		parent, cancel := a.WithTimeout(a.Context(), time.Second)
		defer cancel()
		for i := range 1000 {
			c, cc := a.WithCancel(parent)
			if i%100 == 0 {
				live = append(live, c) // left running
				continue
			}
			cc()
		}
		inner, innerCancel := context.WithCancel(parent)
		defer innerCancel()
		live = append(live, inner)
		afterCtx, afterCancel := a.WithCancel(parent)
		defer afterCancel()
		sc := afterCtx.(*sim.Ctx)
		sc.AfterFunc(func() { ran = true })
		stop := sc.AfterFunc(func() { stoppedRan = true })
		if !stop() {
			t.Error("stop of an AfterFunc not run: false")
		}
		for _, c := range live {
			if c.Err() != nil {
				t.Errorf("a child ended before its parent: %v", c.Err())
			}
		}
		_ = a.Sleep(parent, time.Minute) // until the parent's deadline
	})
	if !w.Settle(func() bool { return w.Actors() == 0 }) {
		t.Fatal("the actor never ended")
	}
	if len(live) != 11 {
		t.Fatalf("%d live children, want 11", len(live))
	}
	for i, c := range live {
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("child %d: %v, want the parent's deadline", i, c.Err())
		}
	}
	if !ran || stoppedRan {
		t.Errorf("AfterFunc ran %v, stopped AfterFunc ran %v; want true, false", ran, stoppedRan)
	}
}

// One seed, one history: actors on several clients, each drawing its own
// times, give the same trace twice.
func TestActorDeterminism(t *testing.T) {
	run := func() (string, string) {
		w, err := sim.New(sim.Config{Seed: 11, Clients: 3, Server: fakeTraced()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		var log []string
		if _, err := sim.Run(w, 0, task.Create("/c", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			w.Go(i%3, func(a *sim.Actor) {
				for j := range 5 {
					ctx, cancel := a.CancelAfterSteps(a.Context(), a.Rand().IntN(6))
					p, err := executor.Await(ctx, a.Exec(), task.Create("/c/n", nil, task.PersistentSequential))
					cancel()
					log = append(log, fmt.Sprintf("%d.%d %s %v", a.ID(), j, p, err))
					_ = a.Sleep(a.Context(), time.Duration(a.Rand().IntN(3))*time.Millisecond)
				}
			})
		}
		if !w.Settle(func() bool { return w.Actors() == 0 }) {
			t.Fatal("actors never ended")
		}
		return strings.Join(log, "\n"), w.Server.TraceHash()
	}
	log1, h1 := run()
	for range 5 {
		log2, h2 := run()
		if log1 != log2 || h1 != h2 {
			t.Fatalf("two runs of one seed differ:\n%s\n---\n%s", log1, log2)
		}
	}
	if !strings.Contains(log1, "canceled") || !strings.Contains(log1, "/c/n") {
		t.Fatalf("no call both canceled and completed:\n%s", log1)
	}
}

// A crash ends the client's actors (their deferred calls run) and Close
// ends the others: no goroutine is left (goleak, TestMain).
func TestActorsEndWithProcess(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 5, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	var unwound []int
	for i := range 2 {
		w.Go(i, func(a *sim.Actor) {
			defer func() { unwound = append(unwound, a.Client()) }()
			_ = a.Wait(a.Context(), make(chan struct{})) // waits for ever
			if !a.Killed() {
				t.Errorf("actor %d's wait ended without its end", a.ID())
			}
		})
	}
	w.Drive()
	if w.Actors() != 2 {
		t.Fatalf("%d actors", w.Actors())
	}
	if err := w.Crash(1, false); err != nil {
		t.Fatal(err)
	}
	if w.Actors() != 1 || len(unwound) != 1 || unwound[0] != 1 {
		t.Fatalf("after the crash: %d actors, unwound %v", w.Actors(), unwound)
	}
	w.Close()
	if w.Actors() != 0 || len(unwound) != 2 {
		t.Fatalf("after Close: %d actors, unwound %v", w.Actors(), unwound)
	}
}

func fakeTraced() fakezk.Config { return fakezk.Config{Trace: true} }

// A context that ends while its actor's process is paused ends only
// after the thaw, once the outcomes the thaw delivers have woken their
// actors: an actor never finds both its flow's outcome and its context's
// end ready, so its select (as a blocking call's: park.Wait, then a
// select of the outcome and ctx.Done) draws nothing at random and every
// seed replays. Here the flow's timer fires at the thaw and the
// context's deadline passes during the pause: the outcome comes first,
// in every seed.
func TestActorContextEndsAfterThaw(t *testing.T) {
	for seed := range uint64(30) {
		w, err := sim.New(sim.Config{Seed: seed + 1, Clients: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := errors.New("the actor did not run")
		w.Go(0, func(a *sim.Actor) {
			ctx, cancel := a.WithTimeout(a.Context(), time.Second)
			defer cancel()
			ch := make(chan error, 1)
			executor.Submit(a.Exec(), c.Sleep(2*time.Second), func(_ task.Unit, err error) { ch <- err })
			park.Wait(ctx, func() bool { return len(ch) > 0 || ctx.Err() != nil })
			select {
			case got = <-ch:
			case <-ctx.Done():
				got = ctx.Err()
			}
		})
		w.Clock.AfterFunc(500*time.Millisecond, func() { w.Pause(0, 3*time.Second) })
		ok := w.Settle(func() bool { return w.Actors() == 0 })
		w.Close()
		if !ok || got != nil {
			t.Fatalf("seed %d: the actor got %v (ended %v), want the outcome the thaw delivered", seed+1, got, ok)
		}
	}
}

// A context ended by World.Interrupt inside a job is a caller whose
// context ends while the executor runs that job: the actor looks at once,
// before the job hands over the outcome, and cancels its flow, which the
// job then completes all the same (executor.Await returns ctx's error
// before the job ends).
// The same context ended by its cancel alone in that job ends between
// steps: the actor looks after the job and finds the outcome.
func TestActorInterruptedInJob(t *testing.T) {
	for _, interrupt := range []bool{false, true} {
		t.Run(fmt.Sprintf("interrupt=%v", interrupt), func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: 9, Clients: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var resume task.Cont[int]
			waitForJob := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
				task.Suspend(s, k, func(r task.Cont[int]) func() {
					resume = r
					return func() { resume = nil }
				})
			})
			var cancelAwait context.CancelFunc
			var got int
			var gotErr error
			returned := false
			actor := w.Go(0, func(a *sim.Actor) {
				ctx, cancel := a.WithCancel(a.Context())
				defer cancel()
				cancelAwait = cancel
				got, gotErr = executor.Await(ctx, a.Exec(), waitForJob)
				returned = true
			})
			w.Drive()
			if resume == nil || returned {
				t.Fatalf("the actor's flow is not waiting (returned %v)", returned)
			}
			lookedInJob := false
			executor.Submit(w.Execs[0], task.Func(func(*task.Scope) (task.Unit, error) {
				if interrupt {
					w.Interrupt(actor, cancelAwait)
				} else {
					cancelAwait()
				}
				lookedInJob = returned // Await does not wait for the flow it cancels
				resume(7, nil)
				return task.Unit{}, nil
			}), nil)
			w.Drive()
			if !returned {
				t.Fatal("the actor did not return")
			}
			if interrupt {
				if !errors.Is(gotErr, task.ErrCanceled) || !lookedInJob {
					t.Errorf("interrupted in the job: Await returned %d, %v (returned in the job: %v); want ctx's error, returned before the job handed the outcome over", got, gotErr, lookedInJob)
				}
			} else if gotErr != nil || got != 7 || lookedInJob {
				t.Errorf("canceled in the job: Await returned %d, %v (returned in the job: %v); want the outcome, 7, found after the job with the context's end", got, gotErr, lookedInJob)
			}
		})
	}
}

// With Config.InJobEnds, a context CancelAfterSteps drew to end in a job
// ends inside the job that ends a flow of its client's executor, before
// that flow hands its outcome over: the actor, waiting in Await for that
// very flow, returns ctx's error in the job, and the outcome goes to no
// one. One drawn to end at a step ends between steps, after the job: the
// actor finds the outcome. The world's stream draws which (one in three);
// each case picks a seed that draws it.
func TestActorCancelAfterStepsInJob(t *testing.T) {
	seedDrawing := func(inJob bool) uint64 {
		for seed := uint64(1); ; seed++ {
			if (sim.InJobStream(seed).IntN(3) == 0) == inJob {
				return seed
			}
		}
	}
	for _, inJob := range []bool{false, true} {
		t.Run(fmt.Sprintf("inJob=%v", inJob), func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: seedDrawing(inJob), Clients: 1, InJobEnds: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var resume task.Cont[int]
			waitForJob := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
				task.Suspend(s, k, func(r task.Cont[int]) func() {
					resume = r
					return func() { resume = nil }
				})
			})
			var got int
			var gotErr error
			returned := false
			w.Go(0, func(a *sim.Actor) {
				// k = 999: at the first flow end from now (999 mod 3 is
				// 0), or at a step far past this test's.
				ctx, cancel := a.CancelAfterSteps(a.Context(), 999)
				defer cancel()
				got, gotErr = executor.Await(ctx, a.Exec(), waitForJob)
				returned = true
			})
			// The actor's first turn makes its context and submits; the
			// executor starts the flow, which waits.
			for resume == nil && !returned {
				if w.Step() == 0 {
					t.Fatal("the world went idle before the flow waited")
				}
			}
			if returned {
				t.Fatalf("the actor returned before its flow ended: %d, %v", got, gotErr)
			}
			lookedInJob := false
			executor.Submit(w.Execs[0], task.Func(func(*task.Scope) (task.Unit, error) {
				resume(7, nil) // ends the awaited flow, in this job
				lookedInJob = returned
				return task.Unit{}, nil
			}), nil)
			w.Drive()
			if !returned {
				t.Fatal("the actor did not return")
			}
			if inJob {
				if !errors.Is(gotErr, task.ErrCanceled) || !lookedInJob {
					t.Errorf("ended in the job: Await returned %d, %v (returned in the job: %v); want ctx's error, returned before the job handed the outcome over", got, gotErr, lookedInJob)
				}
			} else if gotErr != nil || got != 7 || lookedInJob {
				t.Errorf("to end at a later step: Await returned %d, %v (returned in the job: %v); want the outcome, 7, after the job", got, gotErr, lookedInJob)
			}
		})
	}
}

// Receive gives an actor the values sent on a channel at the instants
// they are sent, then the channel's close; a context that ends first
// ends the wait with its error, and a value already there is returned
// even if the context has ended.
func TestReceive(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 3, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ch := make(chan int, 1)
	var got []string
	w.Go(0, func(a *sim.Actor) {
		now := func() time.Duration { return a.World().Clock.Now().Sub(fakezk.Epoch) }
		for {
			v, ok, err := sim.Receive(a.Context(), a, ch)
			if !ok || err != nil {
				got = append(got, fmt.Sprintf("closed at %v: %v %v", now(), ok, err))
				break
			}
			got = append(got, fmt.Sprintf("%d at %v", v, now()))
		}
		ctx, cancel := a.WithTimeout(a.Context(), time.Second)
		defer cancel()
		_, ok, err := sim.Receive(ctx, a, make(chan int))
		got = append(got, fmt.Sprintf("nothing, at %v: %v %v", now(), ok, err))

		ended, end := a.WithCancel(a.Context())
		end()
		full := make(chan int, 1)
		full <- 7
		v, ok, err := sim.Receive(ended, a, full)
		got = append(got, fmt.Sprintf("%d with its context ended: %v %v", v, ok, err))
	})
	w.Clock.AfterFunc(100*time.Millisecond, func() { ch <- 1 })
	w.Clock.AfterFunc(200*time.Millisecond, func() { ch <- 2 })
	w.Clock.AfterFunc(300*time.Millisecond, func() { close(ch) })
	if !w.Settle(func() bool { return w.Actors() == 0 }) {
		t.Fatalf("the actor did not end: %q", got)
	}
	want := []string{
		"1 at 100ms", "2 at 200ms", "closed at 300ms: false <nil>",
		"nothing, at 1.3s: false context deadline exceeded",
		"7 with its context ended: true <nil>",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// With Config.ActorLag some wake-ups come late: the world goes on (other
// flows run, the clock moves) while an actor whose outcome is in has not
// run yet; its contexts end only after it has run, and a seed replays.
func TestActorLag(t *testing.T) {
	run := func(seed uint64, lag bool) (late, timed int, history string) {
		w, err := sim.New(sim.Config{Seed: seed, Clients: 1, ActorLag: lag})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		var log []string
		// A ticker flow counts steps of the world that the actor misses.
		ticks := 0
		var tick task.Task[task.Unit]
		tick = c.Then(c.Sleep(time.Millisecond), func(task.Unit) task.Task[task.Unit] { ticks++; return tick })
		executor.Submit(w.Execs[0], tick, nil)
		w.Go(0, func(a *sim.Actor) {
			for i := range 200 {
				ctx, cancel := a.CancelAfterSteps(a.Context(), 0)
				before, at := ticks, w.Clock.Now()
				_, err := executor.Await(ctx, a.Exec(), task.Exists(fmt.Sprintf("/n%d", i)))
				cancel()
				if err != nil && !errors.Is(err, task.ErrCanceled) {
					log = append(log, "exists: "+err.Error())
				}
				if ticks > before {
					late++
				}
				if w.Clock.Now().After(at) {
					timed++
				}
				log = append(log, fmt.Sprintf("%d:%v", ticks-before, err != nil))
			}
		})
		if !w.Settle(func() bool { return w.Actors() == 0 }) {
			t.Fatal("the actor never ended")
		}
		return late, timed, strings.Join(log, " ")
	}
	if late, timed, _ := run(5, false); late+timed != 0 {
		t.Fatalf("without ActorLag, %d calls woke after the ticker ticked, %d after the clock moved", late, timed)
	}
	late, timed, h1 := run(5, true)
	if late == 0 || timed == 0 {
		t.Fatalf("over 200 calls, %d woke after the ticker ticked and %d after the clock moved: no wake-up came late", late, timed)
	}
	if _, _, h2 := run(5, true); h1 != h2 {
		t.Fatalf("one seed, two histories:\n%s\n%s", h1, h2)
	}
}

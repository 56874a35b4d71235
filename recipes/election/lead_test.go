package election_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// A campaign refused for good (the directory's ACL lets this session only
// read it: ErrNoAuth) ends Lead with that error, instead of campaigning
// again and again.
func TestLeadPermanentErrorEnds(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	exs, stop := clients(srv, 1)
	defer stop()
	// A failure bound in real time, not an ordering: Lead must end long
	// before it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
	if _, err := executor.Await(ctx, exs[0], task.CreateWith(&task.CreateRequest{Path: "/ro", ACL: readOnly})); err != nil {
		t.Fatal(err)
	}
	cl, err := election.NewClient(exs[0], "/ro")
	if err != nil {
		t.Fatal(err)
	}
	led := false
	err = cl.Lead(ctx, election.LeadOptions{}, func(context.Context, *election.Leadership) error { led = true; return nil })
	if !errors.Is(err, task.ErrNoAuth) || led {
		t.Fatalf("Lead on a directory it may not create in = %v (led %v), want ErrNoAuth", err, led)
	}
}

// failing is a Candidate whose campaigns fail with err, counted.
type failing struct {
	err      error
	attempts atomic.Int64
}

func (f *failing) Campaign() task.Task[*election.Leadership] {
	return task.Func(func(*task.Scope) (*election.Leadership, error) {
		f.attempts.Add(1)
		return nil, f.err
	})
}
func (f *failing) Leader() task.Task[[]byte] { return task.Fail[[]byte](f.err) }
func (f *failing) Observe(func(election.Observation)) task.Task[*election.Observer] {
	return task.Fail[*election.Observer](f.err)
}

// leadBackoff runs Lead over a candidate whose campaigns fail with a
// transient error, on an executor with a controlled clock and seed, and
// returns the waits between campaigns: after each failure there is one
// more campaign only once the clock has passed the wait.
func leadBackoff(t *testing.T, seed uint64, transient error, rounds int) []time.Duration {
	t.Helper()
	clock := fakezk.NewClock(time.Time{})
	ex, err := executor.New(executor.Config{Clock: clock, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	run, stopRun := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stopRun(); <-ran }()

	cand := &failing{err: transient}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- election.ClientOf(ex, cand).Lead(ctx, election.LeadOptions{}, func(context.Context, *election.Leadership) error { return nil })
	}()
	var waits []time.Duration
	for i := 1; i <= rounds; i++ {
		// The i-th campaign has failed; Lead now waits on the clock.
		for {
			if n := cand.attempts.Load(); n > int64(i) {
				t.Fatalf("campaign %d started with no clock advance (a tight loop)", n)
			}
			if at, ok := clock.NextTimer(); ok && cand.attempts.Load() == int64(i) {
				waits = append(waits, at.Sub(clock.Now()))
				break
			}
			select {
			case err := <-done:
				t.Fatalf("Lead ended on a transient error: %v", err)
			default:
			}
			runtime.Gosched()
		}
		clock.AdvanceToNext()
		for cand.attempts.Load() == int64(i) {
			runtime.Gosched()
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lead after cancel = %v", err)
	}
	return waits
}

// A campaign that fails with a transient error is run again after a wait
// on the executor's clock: bounded exponential, with jitter drawn from
// the executor's seeded source (the same seed, the same waits).
func TestLeadTransientErrorBacksOff(t *testing.T) {
	for _, transient := range []error{task.ErrSessionExpired, task.ErrConnectionLoss, election.ErrLost} {
		waits := leadBackoff(t, 7, transient, 12)
		b := election.DefaultLeadBackoff
		for i, w := range waits {
			lo, hi := b.Delay(i+1, 0), b.Delay(i+1, 1)
			if w < lo || w > hi {
				t.Fatalf("%v: wait %d = %v, want in [%v, %v] (all: %v)", transient, i+1, w, lo, hi, waits)
			}
		}
		if last := waits[len(waits)-1]; last > b.Max+time.Duration(float64(b.Max)*b.Jitter) {
			t.Fatalf("%v: wait %v past the cap %v", transient, last, b.Max)
		}
		again := leadBackoff(t, 7, transient, 12)
		for i := range waits {
			if waits[i] != again[i] {
				t.Fatalf("%v: the same seed waited %v, then %v", transient, waits, again)
			}
		}
	}
}

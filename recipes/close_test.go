package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// Goroutines that loop over the blocking Clients' takes and give-backs,
// and their watchers' reads (election's Observe channel included), with
// contexts that never end, when the
// executor is stopped under them (Close, or the end of Run's ctx): every
// call returns, with task.ErrClosed, whatever it was doing (waiting to
// take, giving back, submitting as the stop began). A hang here is a
// flow the executor accepted and never ended, or a wait on something
// only a running executor would give. Randomized: the scheduler picks
// the points the stop meets the calls at (executor's
// TestCloseEndsAFlowSubmittedAsItBegins holds the one that hung a
// release before, deterministically).
func TestCloseEndsEveryBlockingCall(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	bg := context.Background()
	for round := range 20 {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: uint64(round + 1),
			OnError: func(error) {}, // the give-backs a Close cuts short
		})
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan struct{})
		run, stop := context.WithCancel(bg)
		defer stop()
		go func() { defer close(ran); _ = ex.Run(run) }()
		how := "Close" // odd rounds stop the executor by ending Run's ctx instead
		if round%2 == 1 {
			how = "the end of Run's ctx"
		}
		dir := func(r string) string { return fmt.Sprintf("/close/%s/%d", r, round) }
		ids, err1 := seqid.NewClient(ex, dir("ids"), 3)
		sem, err2 := semaphore.NewClient(ex, dir("sem"), 2)
		q, err3 := queue.NewClient(ex, dir("q"), queue.WithMode(queue.AtLeastOnce))
		lk1, err4 := lock.NewClient(ex, dir("lock"))
		lk2, err7 := lock.NewClient(ex, dir("lock")) // a lock Client holds one lock at a time: one per goroutine
		rw, err5 := rwlock.NewClient(ex, dir("rw"))
		g, err6 := group.NewClient(ex, dir("group"))
		el1, err8 := election.NewClient(ex, dir("election"))
		el2, err9 := election.NewClient(ex, dir("election"))
		cfg, err10 := config.NewClient(ex, dir("config"))
		disc, err11 := discovery.NewClient(ex, dir("discovery"))
		el3, err12 := election.NewClient(ex, dir("election"))
		part, err13 := partition.NewClient(ex, dir("partition"), []string{"a", "b", "c"})
		if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9, err10, err11, err12, err13); err != nil {
			t.Fatal(err)
		}
		lockLoop := func(lk *lock.Client) func() error {
			return func() error {
				h, err := lk.Acquire(bg)
				if err != nil {
					return err
				}
				return lk.Release(bg, h)
			}
		}
		campaign := func(el *election.Client) func() error {
			return func() error {
				l, err := el.Campaign(bg)
				if err != nil {
					return err
				}
				return el.Resign(bg, l)
			}
		}
		updates := 0 // (the updating goroutine's)
		// Each loop runs on a goroutine of its own; the Clients but lock's
		// and election's are shared by two.
		seqidNext := func() error { _, err := ids.Next(bg); return err }
		loops := map[string]func() error{
			"seqid Next":                seqidNext,
			"seqid Next (2)":            seqidNext,
			"lock Acquire, Release":     lockLoop(lk1),
			"lock Acquire, Release (2)": lockLoop(lk2),
			"semaphore Acquire, Release": func() error {
				l, err := sem.Acquire(bg)
				if err != nil {
					return err
				}
				return sem.Release(bg, l)
			},
			"queue Put, Take, Ack": func() error {
				if _, err := q.Put(bg, []byte("x")); err != nil {
					return err
				}
				it, err := q.Take(bg)
				if err != nil {
					return err
				}
				return q.Ack(bg, it)
			},
			"election Campaign, Resign":     campaign(el1),
			"election Campaign, Resign (2)": campaign(el2),
			"election Observe": func() error { // the campaigns above keep it changing
				ctx, cancel := context.WithCancel(bg)
				defer cancel()
				ch, err := el1.Observe(ctx)
				if err != nil {
					return err
				}
				for range 3 {
					if _, ok := <-ch; !ok {
						return nil // closed by the stop: the next Observe says why
					}
				}
				cancel()
				for range ch { // closed once the observer has stopped
				}
				return nil
			},
			"group Watch, Next, Stop": func() error { // the members below keep it changing
				w, err := g.Watch(bg)
				if err != nil {
					return err
				}
				for range 3 {
					if _, err := w.Next(bg); err != nil {
						return err
					}
				}
				return w.Stop(bg)
			},
			"cache Start, Next, Stop": func() error { // of the group's directory
				cc, err := cache.NewChildrenClient(ex, dir("group"))
				if err != nil {
					return err
				}
				if err := cc.Start(bg); err != nil {
					return err
				}
				for range 3 {
					if _, err := cc.Next(bg); err != nil {
						return err
					}
				}
				return cc.Stop(bg)
			},
			"config Update": func() error {
				updates++
				return cfg.Update(bg, map[string][]byte{"k": []byte(fmt.Sprint(updates))})
			},
			"config Watch, Next, Stop": func() error {
				r, err := cfg.Watch(bg)
				if err != nil {
					return err
				}
				for range 3 {
					if _, err := r.Next(bg); err != nil {
						return err
					}
				}
				return r.Stop(bg)
			},
			"election Lead with Requeue": func() error { // leads a round trip at a time, forever
				return el3.Lead(bg, election.LeadOptions{Requeue: true}, func(ctx context.Context, l *election.Leadership) error {
					if _, err := el3.Leader(ctx); err != nil && ctx.Err() == nil {
						return err
					}
					return nil // the leadership ended: Lead campaigns again
				})
			},
			"partition Join, Wait, Leave": func() error {
				m, err := part.Join(bg, "p", nil)
				if err != nil {
					return err
				}
				if _, err := part.Wait(bg, m); err != nil {
					return err
				}
				return part.Leave(bg, m)
			},
			"discovery Register, Unregister": func() error {
				reg, err := disc.Register(bg, discovery.Instance{Name: "s", ID: "i", Port: 80})
				if err != nil {
					return err
				}
				return disc.Unregister(bg, reg)
			},
			"discovery StartCache, Next, Stop": func() error { // the loop above keeps it changing
				sc, err := disc.StartCache(bg, "s")
				if err != nil {
					return err
				}
				for range 3 {
					if _, err := sc.Next(bg); err != nil {
						return err
					}
				}
				return sc.Stop(bg)
			},
			"rwlock AcquireRead, Release": func() error {
				h, err := rw.AcquireRead(bg)
				if err != nil {
					return err
				}
				return rw.Release(bg, h)
			},
		}
		var rounds atomic.Int64
		enough := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		errs := make(chan error, len(loops)+1)
		for name, loop := range loops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if err := loop(); err != nil {
						errs <- fmt.Errorf("%s: %w", name, err)
						return
					}
					if rounds.Add(1) == int64(40+round*10) {
						once.Do(func() { close(enough) })
					}
				}
			}()
		}
		wg.Add(1)
		go func() { // a member that joins and leaves by a distinct name each time
			defer wg.Done()
			for k := 0; ; k++ {
				m, err := g.Join(bg, fmt.Sprintf("m%d", k), nil)
				if err == nil {
					err = g.Leave(bg, m)
				}
				if err != nil {
					errs <- fmt.Errorf("group Join, Leave: %w", err)
					return
				}
			}
		}()
		ended := make(chan struct{})
		go func() { wg.Wait(); close(ended) }()
		select {
		case <-enough:
		case <-ended: // every loop failed before: their errors say why
		}
		if round%2 == 1 {
			stop()
			<-ran
		} else {
			ex.Close()
		}
		select {
		case <-ended:
		case <-time.After(20 * time.Second): // a guard against a hang, not an ordering
			t.Fatalf("round %d: a blocking call still waits 20 s after %s stopped the executor", round, how)
		}
		<-ran
		close(errs)
		for err := range errs {
			if !errors.Is(err, task.ErrClosed) {
				t.Errorf("round %d: after %s: %v, want task.ErrClosed", round, how, err)
			}
		}
	}
}

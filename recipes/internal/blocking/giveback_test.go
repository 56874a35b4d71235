package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// bound is how long a step that must happen may take before the test
// fails (a failure bound on real time, not an ordering: every step ends
// much sooner on an in-memory server).
const bound = 10 * time.Second

// processes is a fakezk server in Async mode and n executors on sessions
// of their own (processes), each run until the test ends.
func processes(t *testing.T, n int) (*fakezk.Server, []*executor.Executor) {
	t.Helper()
	srv := fakezk.New(fakezk.Config{Async: true})
	run, stop := context.WithCancel(context.Background())
	var running []chan struct{}
	t.Cleanup(func() {
		stop()
		for _, d := range running {
			<-d
		}
		srv.Close()
	})
	exs := make([]*executor.Executor, n)
	for i := range exs {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: uint64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(run) }()
		running = append(running, done)
		exs[i] = ex
	}
	return srv, exs
}

// endedCtx is a context canceled already.
func endedCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// incarnation is the czxid of the node at path, 0 if there is none.
func incarnation(srv *fakezk.Server, path string) int64 {
	st, ok := srv.NodeStat(path)
	if !ok {
		return 0
	}
	return st.Czxid
}

// gone waits (polling, within ctx) until the node h took is gone: no node
// at its path, or another incarnation (a Master's path is always the
// same).
func gone(ctx context.Context, srv *fakezk.Server, h holding) error {
	for {
		if incarnation(srv, h.path) != h.czxid {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s still there", h.path)
		}
		runtime.Gosched()
	}
}

// holding is a handle a recipe's Client took: its node and its end.
type holding struct {
	h     any
	path  string
	done  <-chan struct{}
	czxid int64 // of the node, set by takeOn
}

// takeOn is take that notes the czxid of the node taken.
func takeOn(srv *fakezk.Server, take func(context.Context, int) (holding, error), ctx context.Context, i int) (holding, error) {
	h, err := take(ctx, i)
	if err == nil {
		h.czxid = incarnation(srv, h.path)
	}
	return h, err
}

// giveBack is one recipe's blocking face: take something on process i
// (its node is path), give it back.
type giveBack struct {
	name string
	// exclusive: while one process holds, another's take waits (so the
	// other's take succeeding shows the node went).
	exclusive bool
	setup     func(t *testing.T, exs []*executor.Executor) (take func(ctx context.Context, i int) (holding, error), give func(ctx context.Context, i int, h holding) error)
}

var giveBacks = []giveBack{
	{name: "lock", exclusive: true, setup: func(t *testing.T, exs []*executor.Executor) (func(context.Context, int) (holding, error), func(context.Context, int, holding) error) {
		cs := make([]*lock.Client, len(exs))
		for i, ex := range exs {
			cs[i] = must(lock.NewClient(ex, "/lock"))
		}
		return func(ctx context.Context, i int) (holding, error) {
				h, err := cs[i].Acquire(ctx)
				if err != nil {
					return holding{}, err
				}
				return holding{h: h, path: h.Path(), done: h.Done()}, nil
			}, func(ctx context.Context, i int, h holding) error {
				return cs[i].Release(ctx, h.h.(*lock.Held))
			}
	}},
	{name: "rwlock write", exclusive: true, setup: func(t *testing.T, exs []*executor.Executor) (func(context.Context, int) (holding, error), func(context.Context, int, holding) error) {
		cs := make([]*rwlock.Client, len(exs))
		for i, ex := range exs {
			cs[i] = must(rwlock.NewClient(ex, "/rw"))
		}
		return func(ctx context.Context, i int) (holding, error) {
				h, err := cs[i].Acquire(ctx)
				if err != nil {
					return holding{}, err
				}
				return holding{h: h, path: h.Path(), done: h.Done()}, nil
			}, func(ctx context.Context, i int, h holding) error {
				return cs[i].Release(ctx, h.h.(*rwlock.Held))
			}
	}},
	{name: "rwlock read", exclusive: true, setup: func(t *testing.T, exs []*executor.Executor) (func(context.Context, int) (holding, error), func(context.Context, int, holding) error) {
		cs := make([]*rwlock.Client, len(exs))
		for i, ex := range exs {
			cs[i] = must(rwlock.NewClient(ex, "/rw"))
		}
		return func(ctx context.Context, i int) (holding, error) {
				// Process 0 reads; the others write, so they wait for its
				// read lock to go.
				acquire := cs[i].Acquire
				if i == 0 {
					acquire = cs[i].AcquireRead
				}
				h, err := acquire(ctx)
				if err != nil {
					return holding{}, err
				}
				return holding{h: h, path: h.Path(), done: h.Done()}, nil
			}, func(ctx context.Context, i int, h holding) error {
				return cs[i].Release(ctx, h.h.(*rwlock.Held))
			}
	}},
	{name: "semaphore", exclusive: true, setup: func(t *testing.T, exs []*executor.Executor) (func(context.Context, int) (holding, error), func(context.Context, int, holding) error) {
		cs := make([]*semaphore.Client, len(exs))
		for i, ex := range exs {
			cs[i] = must(semaphore.NewClient(ex, "/sem", 1))
		}
		return func(ctx context.Context, i int) (holding, error) {
				l, err := cs[i].Acquire(ctx)
				if err != nil {
					return holding{}, err
				}
				return holding{h: l, path: l.Path(), done: l.Done()}, nil
			}, func(ctx context.Context, i int, h holding) error {
				return cs[i].Release(ctx, h.h.(*semaphore.Lease))
			}
	}},
	{name: "election", exclusive: true, setup: func(t *testing.T, exs []*executor.Executor) (func(context.Context, int) (holding, error), func(context.Context, int, holding) error) {
		cs := make([]*election.Client, len(exs))
		for i, ex := range exs {
			cs[i] = must(election.NewClient(ex, "/el"))
		}
		return func(ctx context.Context, i int) (holding, error) {
				l, err := cs[i].Campaign(ctx)
				if err != nil {
					return holding{}, err
				}
				return holding{h: l, path: l.Path(), done: l.Done()}, nil
			}, func(ctx context.Context, i int, h holding) error {
				return cs[i].Resign(ctx, h.h.(*election.Leadership))
			}
	}},
	{name: "master", exclusive: true, setup: func(t *testing.T, exs []*executor.Executor) (func(context.Context, int) (holding, error), func(context.Context, int, holding) error) {
		cs := make([]*election.Client, len(exs))
		for i, ex := range exs {
			cs[i] = must(election.NewMasterClient(ex, "/master"))
		}
		return func(ctx context.Context, i int) (holding, error) {
				l, err := cs[i].Campaign(ctx)
				if err != nil {
					return holding{}, err
				}
				return holding{h: l, path: l.Path(), done: l.Done()}, nil
			}, func(ctx context.Context, i int, h holding) error {
				return cs[i].Resign(ctx, h.h.(*election.Leadership))
			}
	}},
	{name: "group", setup: func(t *testing.T, exs []*executor.Executor) (func(context.Context, int) (holding, error), func(context.Context, int, holding) error) {
		cs := make([]*group.Client, len(exs))
		for i, ex := range exs {
			cs[i] = must(group.NewClient(ex, "/g"))
		}
		n := 0
		return func(ctx context.Context, i int) (holding, error) {
				n++
				m, err := cs[i].Join(ctx, fmt.Sprintf("m%d", n), nil)
				if err != nil {
					return holding{}, err
				}
				return holding{h: m, path: m.Path(), done: m.Done()}, nil
			}, func(ctx context.Context, i int, h holding) error {
				return cs[i].Leave(ctx, h.h.(*group.Member))
			}
	}},
	{name: "double barrier", setup: func(t *testing.T, exs []*executor.Executor) (func(context.Context, int) (holding, error), func(context.Context, int, holding) error) {
		cs := make([]*barrier.DoubleClient, len(exs))
		for i, ex := range exs {
			cs[i] = must(barrier.NewDoubleClient(ex, "/db", 1))
		}
		return func(ctx context.Context, i int) (holding, error) {
				p, err := cs[i].Enter(ctx)
				if err != nil {
					return holding{}, err
				}
				return holding{h: p, path: p.Path()}, nil
			}, func(ctx context.Context, i int, h holding) error {
				return cs[i].Leave(ctx, h.h.(*barrier.Participant))
			}
	}},
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Every blocking call that gives something up starts its give-back
// whatever the context: with a context that has ended (the pattern
// `defer c.Release(ctx, held)` after a cancel in the critical section),
// the call returns the context's error at once, and the node still goes,
// in the background: the handle ends, the same Client takes again, and
// another process takes after it.
func TestGiveBackWithEndedContext(t *testing.T) {
	for _, tc := range giveBacks {
		t.Run(tc.name, func(t *testing.T) {
			srv, exs := processes(t, 2)
			take, give := tc.setup(t, exs)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()

			h, err := takeOn(srv, take, ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := give(endedCtx(), 0, h); !errors.Is(err, context.Canceled) || !errors.Is(err, task.ErrCanceled) {
				t.Fatalf("give back with an ended context = %v, want the context's error", err)
			}
			if h.done != nil {
				select {
				case <-h.done:
				case <-ctx.Done():
					t.Fatal("the handle did not end after a give-back with an ended context")
				}
			}
			// The same Client takes again at once: it waits for its own
			// give-back, if need be, rather than refusing.
			h2, err := takeOn(srv, take, ctx, 0)
			if err != nil {
				t.Fatalf("the same Client's next take: %v", err)
			}
			if err := gone(ctx, srv, h); err != nil {
				t.Fatalf("the node of the give-back with an ended context: %v", err)
			}
			if h2.czxid == h.czxid {
				t.Fatalf("took %s again", h.path)
			}
			if err := give(endedCtx(), 0, h2); !errors.Is(err, task.ErrCanceled) {
				t.Fatalf("second give back: %v", err)
			}
			// Another process takes after it.
			h3, err := takeOn(srv, take, ctx, 1)
			if err != nil {
				t.Fatalf("another process: %v", err)
			}
			if err := gone(ctx, srv, h2); err != nil {
				t.Fatal(err)
			}
			if err := give(ctx, 1, h3); err != nil {
				t.Fatalf("give back with a live context: %v", err)
			}
			if err := gone(ctx, srv, h3); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A context that ends as the give-back is called (before it is
// submitted, or while it waits) returns the context's error or the
// outcome; either way the give-back is made, and another process takes.
func TestGiveBackContextEndsMeanwhile(t *testing.T) {
	for _, tc := range giveBacks {
		if !tc.exclusive {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			srv, exs := processes(t, 2)
			take, give := tc.setup(t, exs)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			h, err := takeOn(srv, take, ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			short, stop := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- give(short, 0, h) }()
			stop()
			if err := <-errc; err != nil && !errors.Is(err, task.ErrCanceled) {
				t.Fatalf("give back whose context ends: %v", err)
			}
			h2, err := takeOn(srv, take, ctx, 1)
			if err != nil {
				t.Fatalf("another process: %v", err)
			}
			if err := gone(ctx, srv, h); err != nil {
				t.Fatal(err)
			}
			if err := give(ctx, 1, h2); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Election's Lead gives the leadership up when it ends, also when its
// context ended inside lead: the next candidate leads without waiting for
// the session to end.
func TestLeadResignsWhenContextEnds(t *testing.T) {
	srv, exs := processes(t, 2)
	a := must(election.NewClient(exs[0], "/el"))
	b := must(election.NewClient(exs[1], "/el"))
	bounded, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	ctx, end := context.WithCancel(bounded)
	var path string
	var czxid int64
	err := a.Lead(ctx, election.LeadOptions{}, func(lctx context.Context, l *election.Leadership) error {
		path = l.Path()
		czxid = incarnation(srv, path)
		end() // the caller's context ends while leading
		<-lctx.Done()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Lead = %v, want the context's error", err)
	}
	l, err := b.Campaign(bounded)
	if err != nil {
		t.Fatalf("next candidate: %v (the leader's node left behind?)", err)
	}
	if err := gone(bounded, srv, holding{path: path, czxid: czxid}); err != nil {
		t.Fatal(err)
	}
	if err := b.Resign(bounded, l); err != nil {
		t.Fatal(err)
	}
}

// stopper is a running watcher (a cache, a config reader, a group view)
// and how to stop it and tell it stopped.
type stopper struct {
	name  string
	start func(ctx context.Context, ex *executor.Executor) (stop func(context.Context) error, stopped func(context.Context) error, err error)
}

var stoppers = []stopper{
	{name: "children cache", start: func(ctx context.Context, ex *executor.Executor) (func(context.Context) error, func(context.Context) error, error) {
		c, err := cache.NewChildrenClient(ex, "/w")
		if err != nil {
			return nil, nil, err
		}
		if err := c.Start(ctx); err != nil {
			return nil, nil, err
		}
		return c.Stop, func(ctx context.Context) error {
			select {
			case <-c.Done():
				if !errors.Is(c.Err(), cache.ErrStopped) {
					return fmt.Errorf("cache ended with %v", c.Err())
				}
				return nil
			case <-ctx.Done():
				return errors.New("cache still running")
			}
		}, nil
	}},
	{name: "tree cache", start: func(ctx context.Context, ex *executor.Executor) (func(context.Context) error, func(context.Context) error, error) {
		c, err := cache.NewTreeClient(ex, "/w")
		if err != nil {
			return nil, nil, err
		}
		if err := c.Start(ctx); err != nil {
			return nil, nil, err
		}
		return c.Stop, func(ctx context.Context) error {
			select {
			case <-c.Done():
				return nil
			case <-ctx.Done():
				return errors.New("cache still running")
			}
		}, nil
	}},
	{name: "config reader", start: func(ctx context.Context, ex *executor.Executor) (func(context.Context) error, func(context.Context) error, error) {
		r, err := must(config.NewClient(ex, "/w")).Watch(ctx)
		if err != nil {
			return nil, nil, err
		}
		if _, err := r.Next(ctx); err != nil { // the first snapshot
			return nil, nil, err
		}
		return r.Stop, func(ctx context.Context) error {
			_, err := r.Next(ctx)
			if err == nil || errors.Is(err, task.ErrDeadlineExceeded) {
				return fmt.Errorf("reader still running: %v", err)
			}
			return nil
		}, nil
	}},
	{name: "group watcher", start: func(ctx context.Context, ex *executor.Executor) (func(context.Context) error, func(context.Context) error, error) {
		w, err := must(group.NewClient(ex, "/w")).Watch(ctx)
		if err != nil {
			return nil, nil, err
		}
		if _, err := w.Next(ctx); err != nil { // the first listing
			return nil, nil, err
		}
		return w.Stop, func(ctx context.Context) error {
			_, err := w.Next(ctx)
			if err == nil || errors.Is(err, task.ErrDeadlineExceeded) {
				return fmt.Errorf("watcher still running: %v", err)
			}
			return nil
		}, nil
	}},
}

// Stop with a context that has ended still stops: it returns the
// context's error and the watcher ends in the background.
func TestStopWithEndedContext(t *testing.T) {
	for _, tc := range stoppers {
		t.Run(tc.name, func(t *testing.T) {
			_, exs := processes(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			if _, err := executor.Await(ctx, exs[0], task.Create("/w", nil, task.Persistent)); err != nil {
				t.Fatal(err)
			}
			stop, stopped, err := tc.start(ctx, exs[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := stop(endedCtx()); !errors.Is(err, context.Canceled) {
				t.Fatalf("Stop with an ended context = %v, want the context's error", err)
			}
			if err := stopped(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// lockLike is a lock's or an rwlock's Client, the two that refuse a
// second acquire while they hold.
type lockLike struct {
	name    string
	client  func(ex *executor.Executor) (acquire func(context.Context) (holding, error), release func(context.Context, holding) error)
	isHeld  func(holding) bool
	refused error
}

var lockLikes = []lockLike{
	{name: "lock", refused: lock.ErrAlreadyHeld, isHeld: func(h holding) bool { return h.h.(*lock.Held).IsHeld() },
		client: func(ex *executor.Executor) (func(context.Context) (holding, error), func(context.Context, holding) error) {
			c := must(lock.NewClient(ex, "/lock"))
			return func(ctx context.Context) (holding, error) {
					h, err := c.Acquire(ctx)
					if err != nil {
						return holding{}, err
					}
					return holding{h: h, path: h.Path(), done: h.Done()}, nil
				}, func(ctx context.Context, h holding) error {
					return c.Release(ctx, h.h.(*lock.Held))
				}
		}},
	{name: "rwlock", refused: rwlock.ErrAlreadyHeld, isHeld: func(h holding) bool { return h.h.(*rwlock.Held).IsHeld() },
		client: func(ex *executor.Executor) (func(context.Context) (holding, error), func(context.Context, holding) error) {
			c := must(rwlock.NewClient(ex, "/rw"))
			return func(ctx context.Context) (holding, error) {
					h, err := c.Acquire(ctx)
					if err != nil {
						return holding{}, err
					}
					return holding{h: h, path: h.Path(), done: h.Done()}, nil
				}, func(ctx context.Context, h holding) error {
					return c.Release(ctx, h.h.(*rwlock.Held))
				}
		}},
}

// While its release goes on in the background (here: queued, because the
// session is suspended), the Client's next acquire waits for it within
// its own ctx instead of refusing with ErrAlreadyHeld; once the
// connection is back, the release is done and the acquire succeeds.
func TestAcquireWaitsForOwnRelease(t *testing.T) {
	for _, tc := range lockLikes {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{Async: true, Clock: fakezk.NewClock(time.Time{})}) // the test heals the partition
			conn := srv.Connect(fakezk.ConnConfig{})
			ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			run, stop := context.WithCancel(context.Background())
			ran := make(chan struct{})
			go func() { defer close(ran); _ = ex.Run(run) }()
			defer func() { stop(); <-ran; srv.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()

			acquire, release := tc.client(ex)
			h, err := acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			srv.Partition(conn, time.Second, true)
			for tc.isHeld(h) { // the executor has heard of the suspension: its task queue is paused
				if ctx.Err() != nil {
					t.Fatal("the suspension was never heard of")
				}
				runtime.Gosched()
			}
			if err := release(endedCtx(), h); !errors.Is(err, task.ErrCanceled) {
				t.Fatalf("Release with an ended context = %v", err)
			}
			// The release is queued: an acquire waits for it, here with a
			// context that has ended, so it returns that context's error.
			if _, err := acquire(endedCtx()); errors.Is(err, tc.refused) || !errors.Is(err, task.ErrCanceled) {
				t.Fatalf("acquire while the release is queued = %v, want the context's error", err)
			}
			srv.Clock().(*fakezk.Clock).Advance(time.Second) // the partition heals
			h2, err := acquire(ctx)
			if err != nil {
				t.Fatalf("acquire after the release: %v", err)
			}
			if h2.path == h.path {
				t.Fatalf("took %s again", h.path)
			}
			if err := release(ctx, h2); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Remove with a context that has ended still lifts the barrier: the
// processes waiting at it go on.
func TestBarrierRemoveWithEndedContext(t *testing.T) {
	srv, exs := processes(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	holder := must(barrier.NewClient(exs[0], "/gate"))
	waiter := must(barrier.NewClient(exs[1], "/gate"))
	if err := holder.Set(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := holder.Remove(endedCtx()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Remove with an ended context = %v, want the context's error", err)
	}
	if err := waiter.Wait(ctx); err != nil {
		t.Fatalf("Wait after the barrier was removed: %v", err)
	}
	if _, ok := srv.NodeStat("/gate"); ok {
		t.Fatal("the barrier is still there")
	}
}

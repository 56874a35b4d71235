package lock_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// A service that makes an executor per session and closes it (after an
// expiry, at a restart) keeps nothing of the closed ones in the package's
// per-executor state, however each ended: the lock released, held at the
// close, the session expired under it, or Run's ctx ended instead of Close.
func TestClosedExecutorsLeaveNoState(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	// seen notes what ex keeps now, read on its executor goroutine.
	seen := func(ex *executor.Executor, peak *[2]int) {
		kept, err := executor.Await(context.Background(), ex, task.Func(func(s *task.Scope) ([2]int, error) {
			k := [2]int{lock.WatchedSessions(s.Runtime()), 0}
			if lock.KeepsHolders(s.Runtime()) {
				k[1] = 1
			}
			return k, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		peak[0], peak[1] = max(peak[0], kept[0]), max(peak[1], kept[1])
	}
	// left checks, once ex has stopped, that it keeps nothing.
	left := func(ex *executor.Executor, i int) {
		if n := lock.WatchedSessions(ex); n != 0 {
			t.Errorf("executor %d: fast-path state kept for %d sessions after it closed", i, n)
		}
		if lock.KeepsHolders(ex) {
			t.Errorf("executor %d: holders kept after it closed", i)
		}
	}
	for _, end := range []string{"released", "held", "expired", "ctx", "racing"} {
		t.Run(end, func(t *testing.T) {
			var peak [2]int
			for i := range 20 {
				conn := srv.Connect(fakezk.ConnConfig{})
				ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: uint64(i + 1),
					OnError: func(error) {}, // the cleanups a Close cuts short (task.ErrClosed)
				})
				if err != nil {
					t.Fatal(err)
				}
				run, stop := context.WithCancel(context.Background())
				ran := make(chan struct{})
				go func() { defer close(ran); _ = ex.Run(run) }()
				m, err := lock.NewClient(ex, "/leak/"+end)
				if err != nil {
					t.Fatal(err)
				}
				if end == "racing" {
					// Close while a loop of acquires and releases is under way.
					looped := make(chan struct{})
					first := make(chan struct{})
					var once sync.Once
					go func() {
						defer close(looped)
						defer once.Do(func() { close(first) })
						for j := 0; ; j++ {
							h, err := m.Acquire(context.Background())
							if err != nil {
								return
							}
							if j == 1 {
								once.Do(func() { close(first) })
							}
							if m.Release(context.Background(), h) != nil {
								return
							}
						}
					}()
					<-first
					seen(ex, &peak)
					ex.Close()
					stop()
					<-looped
					<-ran
					left(ex, i)
					continue
				}
				for range 3 { // a second acquire takes the fast path, which watches the directory
					h, err := m.Acquire(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					seen(ex, &peak)
					if end == "held" || end == "expired" || end == "ctx" {
						if end == "expired" {
							srv.Expire(conn)
							<-h.Done()
						}
						break
					}
					if err := m.Release(context.Background(), h); err != nil {
						t.Fatal(err)
					}
				}
				if end == "ctx" {
					stop()
				} else {
					ex.Close()
					stop()
				}
				<-ran
				left(ex, i)
			}
			if peak[1] == 0 || (end == "released" && peak[0] == 0) {
				t.Fatalf("the state was never kept (peak %v): the test checks nothing", peak)
			}
		})
	}
}

// A process that crashes abandons its executor (sim.World.Crash: never
// closed, never stepped again). Once nothing refers to it, the executor
// is garbage, however much it held: the package keeps its per-executor
// state (the holders, the fast path's directory watches) on the executor,
// not in a package-level map that outlives it.
func TestAbandonedExecutorIsFreed(t *testing.T) {
	freed := make(chan string, 2)
	func() {
		w, err := sim.New(sim.Config{Seed: 9, Clients: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		l := mustLock(t, "/leak/abandoned")
		for range 3 { // the second acquire takes the fast path: the directory is watched
			h, err := mustRun(t, w, 0, l.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mustRun(t, w, 0, h.Release()); err != nil {
				t.Fatal(err)
			}
		}
		kept, err := mustRun(t, w, 0, task.Func(func(s *task.Scope) (int, error) { return lock.WatchedSessions(s.Runtime()), nil }))
		if err != nil || kept == 0 {
			t.Fatalf("no directory watched after three rounds (%d, %v): the test checks nothing", kept, err)
		}
		if _, err := mustRun(t, w, 0, l.Acquire()); err != nil { // held at the crash
			t.Fatal(err)
		}
		runtime.AddCleanup(w.Execs[0], func(ch chan string) { ch <- "abandoned" }, freed)
		if err := w.Crash(0, true); err != nil {
			t.Fatal(err)
		}
		// The new process takes the lock once its predecessor's session
		// has expired, and is closed with the world.
		if _, err := mustRun(t, w, 0, l.Acquire()); err != nil {
			t.Fatal(err)
		}
		runtime.AddCleanup(w.Execs[0], func(ch chan string) { ch <- "closed" }, freed)
	}()
	got := map[string]bool{}
	for range 50 {
		runtime.GC()
		select {
		case name := <-freed:
			got[name] = true
		case <-time.After(10 * time.Millisecond): // the runtime's cleanup goroutine
		}
		if len(got) == 2 {
			return
		}
	}
	t.Fatalf("executors freed after 50 collections: %v (want the abandoned one and the closed one)", got)
}

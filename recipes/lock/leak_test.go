package lock_test

import (
	"context"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/lock"
)

// A service that makes an executor per session and closes it (after an
// expiry, at a restart) keeps nothing of the closed ones in the package's
// per-executor state, however each ended: the lock released, held at the
// close, the session expired under it, or Run's ctx ended instead of Close.
func TestClosedExecutorsLeaveNoState(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	seen := func(peak *[2]int) {
		peak[0] = max(peak[0], lock.WatchedSessions())
		peak[1] = max(peak[1], lock.HolderRuntimes())
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
					seen(&peak)
					ex.Close()
					stop()
					<-looped
					<-ran
					continue
				}
				for range 3 { // a second acquire takes the fast path, which watches the directory
					h, err := m.Acquire(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					seen(&peak)
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
			}
			if peak[1] == 0 || (end == "released" && peak[0] == 0) {
				t.Fatalf("the state was never kept (peak %v): the test checks nothing", peak)
			}
			if n := lock.WatchedSessions(); n != 0 {
				t.Errorf("fast-path state kept for %d sessions of closed executors", n)
			}
			if n := lock.HolderRuntimes(); n != 0 {
				t.Errorf("holders kept for %d runtimes of closed executors", n)
			}
		})
	}
}

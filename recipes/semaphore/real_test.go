package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// semaphores returns n Semaphores of leases on path, each on a session of
// its own.
func semaphores(t testing.TB, ctx context.Context, addrs []string, path string, leases, n int) []*semaphore.Client {
	t.Helper()
	ss := make([]*semaphore.Client, n)
	for i := range ss {
		s, err := semaphore.NewClient(realtest.Dial(t, ctx, addrs, realtest.Options{}).Ex, path, leases)
		if err != nil {
			t.Fatal(err)
		}
		ss[i] = s
	}
	return ss
}

// inside marks a holder inside while it holds l: it creates an ephemeral
// sequential marker under dir with a fenced write, lists dir until it
// sees want markers (at most 20 times, each listing a check), and deletes
// the marker with a fenced write. It returns the most markers a listing
// showed. A marker exists only while its creator holds a lease (created
// after the acquire, by a write the lease's fence lets through, deleted
// before the release, or gone with the session), so more markers than
// leases would be more holders than leases.
func inside(ctx context.Context, ex *executor.Executor, l *semaphore.Lease, dir string, want int) (int, error) {
	rs, err := executor.Await(ctx, ex, l.Fenced(&task.CreateRequest{Path: dir + "/m-", Mode: task.EphemeralSequential}))
	if err != nil {
		return 0, err
	}
	most := 0
	for range 20 {
		cl, err := executor.Await(ctx, ex, task.Children(dir))
		if err != nil {
			return 0, err
		}
		most = max(most, len(cl.Names))
		if len(cl.Names) >= want {
			break
		}
	}
	_, err = executor.Await(ctx, ex, l.Fenced(&task.DeleteRequest{Path: rs[0].Path, Version: task.AnyVersion}))
	return most, err
}

// On a real server, 6 sessions share 2 leases, 15 sections each: no
// listing of the markers shows more than 2 holders, and 2 hold at once
// at some point (the test really contends). No lease or internal-lock
// node is left.
func TestRealAtMostN(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const path, markers, leases, clients, rounds = "/real/sem", "/real-markers", 2, 6, 15
	ss := semaphores(t, ctx, srv.Addrs(), path, leases, clients)
	if _, err := executor.Await(ctx, ss[0].Executor(), task.Create(markers, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	var (
		peak atomic.Int64
		errs = make([]error, clients)
		wg   sync.WaitGroup
	)
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := s.Acquire(ctx)
				if err != nil {
					errs[i] = fmt.Errorf("client %d: acquire: %w", i, err)
					return
				}
				n, err := inside(ctx, s.Executor(), l, markers, leases)
				if err != nil {
					errs[i] = fmt.Errorf("client %d: inside: %w", i, err)
					return
				}
				for {
					p := peak.Load()
					if int64(n) <= p || peak.CompareAndSwap(p, int64(n)) {
						break
					}
				}
				if n > leases {
					errs[i] = fmt.Errorf("client %d: %d holders of %d leases at once", i, n, leases)
					return
				}
				if err := s.Release(ctx, l); err != nil {
					errs[i] = fmt.Errorf("client %d: return: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sections, at most %d holders at once", clients*rounds, peak.Load())
	if peak.Load() != leases {
		t.Fatalf("at most %d holders at once: the sessions never held all %d leases together", peak.Load(), leases)
	}
	for _, d := range []string{path + "/leases", path + "/locks"} {
		cl, err := executor.Await(ctx, ss[0].Executor(), task.Children(d))
		if err != nil || len(cl.Names) != 0 {
			t.Fatalf("%s: %v %v", d, cl.Names, err)
		}
	}
}

// A holder whose session ends (its client stops) frees its lease: the
// waiter holds, and a TryAcquire meanwhile finds no lease free.
func TestRealSessionEndFreesLease(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{})
	hs, err := semaphore.NewClient(holder.Ex, "/real/end", 1)
	if err != nil {
		t.Fatal(err)
	}
	ss := semaphores(t, ctx, srv.Addrs(), "/real/end", 1, 2)
	l, err := hs.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss[1].TryAcquire(ctx); !errors.Is(err, semaphore.ErrBusy) {
		t.Fatalf("try with the lease taken: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		w, err := ss[0].Acquire(ctx)
		if err == nil {
			err = ss[0].Release(ctx, w)
		}
		got <- err
	}()
	holder.Stop()
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if !errors.Is(l.Err(), semaphore.ErrLeaseLost) {
		t.Fatalf("holder's lease after its session ended: %v", l.Err())
	}
}

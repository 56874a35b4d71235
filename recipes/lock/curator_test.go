package lock_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/task"
)

// This lock and Apache Curator's InterProcessMutex (Debian's Curator 5.4,
// driven by the peer program bench/peers/curator in its interop mode)
// contend on one lock path of a server, real and fakezk on the wire
// (interop.Run), and never both hold it. Each holder, on either side,
// creates one ephemeral marker node while it holds the lock and deletes
// it before releasing: a second holder at the same
// time would find the marker there (NodeExists). Curator's side exits
// with status 3 if it does, ours fails the test; ours creates and deletes
// the marker with fenced writes, so a holder that lost the lock cannot
// touch it. While holding, our clients also list the queue and count
// Curator's contenders waiting behind them: the two recipes really queue
// together, in one order.
func TestCuratorInterop(t *testing.T) {
	prog, err := peers.BuildCurator(peers.DefaultCacheDir())
	if errors.Is(err, peers.ErrUnavailable) && os.Getenv("ZK_REQUIRED") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	interop.Run(t, realOpts, func(t *testing.T, srv interop.Server) { curatorInterop(t, prog, srv) })
}

func curatorInterop(t *testing.T, prog *peers.Program, srv interop.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const dir, marker = "/lock-interop/lock", "/lock-interop-marker"
	const curatorClients, curatorOps, ours, minHolds = 3, 40, 3, 20

	ms := mutexes(t, ctx, srv.Addrs(), "", dir, ours)
	sessions := map[int64]bool{}
	for _, m := range ms {
		id, err := executor.Await(ctx, m.Executor(), task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { k(s.Session().ID, nil) }))
		if err != nil {
			t.Fatal(err)
		}
		sessions[id] = true
	}

	type curatorRun struct {
		r   peers.Result
		err error
	}
	curatorDone := make(chan curatorRun, 1)
	go func() {
		r, err := prog.Run(ctx, peers.Params{Server: srv.Addrs()[0], Scenario: "interop", Clients: curatorClients, Ops: curatorOps,
			Path: dir, Marker: marker}, nil)
		curatorDone <- curatorRun{r, err}
	}()

	var (
		stop       atomic.Bool
		holds      atomic.Int64
		sawCurator atomic.Int64 // holds during which a Curator contender was queued
		errs       = make([]error, ours)
		wg         sync.WaitGroup
	)
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex := m.Executor()
			for !stop.Load() || holds.Load() < minHolds {
				h, err := m.Acquire(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				_, err = executor.Await(ctx, ex, h.Fenced(&task.CreateRequest{Path: marker, Mode: task.Ephemeral}))
				if errors.Is(err, task.ErrNodeExists) {
					errs[i] = errors.New("the marker exists while this lock is held: both sides hold the lock")
					return
				}
				if err != nil {
					errs[i] = err
					return
				}
				if n, err := foreignContenders(ctx, ex, dir, sessions); err != nil {
					errs[i] = err
					return
				} else if n > 0 {
					sawCurator.Add(1)
				}
				if _, err := executor.Await(ctx, ex, h.Fenced(&task.DeleteRequest{Path: marker, Version: task.AnyVersion})); err != nil {
					errs[i] = err
					return
				}
				if err := m.Release(ctx, h); err != nil {
					errs[i] = err
					return
				}
				holds.Add(1)
			}
		}()
	}
	cr := <-curatorDone
	stop.Store(true)
	wg.Wait()
	if cr.err != nil {
		t.Fatalf("curator side: %v", cr.err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("curator: %s", peers.Format(cr.r))
	t.Logf("ours: %d holds, %d of them with a Curator contender queued behind", holds.Load(), sawCurator.Load())
	if cr.r.Holds != curatorClients*curatorOps || cr.r.Errors != 0 {
		t.Fatalf("curator side: %d holds, %d errors; want %d holds", cr.r.Holds, cr.r.Errors, curatorClients*curatorOps)
	}
	if sawCurator.Load() == 0 {
		t.Fatal("our holders never saw a Curator contender queued: the two sides did not contend")
	}
}

// foreignContenders counts the contenders in dir whose session is none of
// ours.
func foreignContenders(ctx context.Context, ex *executor.Executor, dir string, ours map[int64]bool) (int, error) {
	cl, err := executor.Await(ctx, ex, task.Children(dir))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range cl.Names {
		st, err := executor.Await(ctx, ex, task.Exists(dir+"/"+name))
		if err != nil {
			return 0, err
		}
		if st != nil && st.EphemeralOwner != 0 && !ours[st.EphemeralOwner] {
			n++
		}
	}
	return n, nil
}

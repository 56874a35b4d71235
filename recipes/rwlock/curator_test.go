package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// This lock and Apache Curator's InterProcessReadWriteLock (Debian's
// Curator 5.4, driven by the peer program bench/peers/curator in its
// rwinterop mode) contend on one lock path of a server (real and fakezk on
// the wire: interop.Run), readers and
// writers on both sides, and no writer ever holds with another holder.
// The markers (RWInterop.java): a writer creates MARKERS/w (ephemeral,
// it must not exist), then lists MARKERS and must find nothing else; a
// reader creates MARKERS/r-<seq> (ephemeral sequential), then must find
// no MARKERS/w; each deletes its marker before releasing. Of two
// overlapping holders, the one that checks last sees the other's marker.
// Curator's side exits with status 3 if it sees one, ours fails the test;
// ours makes its markers with fenced writes, so a holder that lost the
// lock cannot touch them. While holding, our clients also count Curator's
// contenders in the queue: the two recipes really queue together.
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
	const dir, markers = "/rw-interop/lock", "/rw-interop-markers"
	const curatorClients, curatorOps, ours, minHolds = 3, 45, 3, 30

	ms := rwMutexes(t, ctx, srv.Addrs(), dir, ours)
	mkdirs(t, ctx, ms[0].Executor(), markers)
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
		r, err := prog.Run(ctx, peers.Params{Server: srv.Addrs()[0], Scenario: "rwinterop", Clients: curatorClients, Ops: curatorOps,
			Path: dir, Marker: markers}, nil)
		curatorDone <- curatorRun{r, err}
	}()

	var (
		stop          atomic.Bool
		writes, reads atomic.Int64
		sawCurator    atomic.Int64 // holds during which a Curator contender was in the queue
		errs          = make([]error, ours)
		wg            sync.WaitGroup
		writerMark    = markers + "/w"
	)
	section := func(i int, m *rwlock.Client, write bool) error {
		ex := m.Executor()
		lock := m.AcquireRead
		if write {
			lock = m.Acquire
		}
		h, err := lock(ctx)
		if err != nil {
			return err
		}
		defer m.Release(ctx, h)
		if write {
			if _, err := executor.Await(ctx, ex, h.Fenced(&task.CreateRequest{Path: writerMark, Mode: task.Ephemeral})); errors.Is(err, task.ErrNodeExists) {
				return errors.New("the writer's marker exists while this writer holds")
			} else if err != nil {
				return err
			}
			cl, err := executor.Await(ctx, ex, task.Children(markers))
			if err != nil {
				return err
			}
			if len(cl.Names) != 1 {
				return fmt.Errorf("markers %v while this writer holds", cl.Names)
			}
		} else {
			rs, err := executor.Await(ctx, ex, h.Fenced(&task.CreateRequest{Path: markers + "/r-", Mode: task.EphemeralSequential}))
			if err != nil {
				return err
			}
			st, err := executor.Await(ctx, ex, task.Exists(writerMark))
			if err != nil {
				return err
			}
			if st != nil {
				return errors.New("the writer's marker exists while this reader holds")
			}
			mine := rs[0].Path
			defer func() { _, _ = executor.Await(ctx, ex, task.Delete(mine, task.AnyVersion)) }()
		}
		if n, err := foreignContenders(ctx, ex, dir, sessions); err != nil {
			return err
		} else if n > 0 {
			sawCurator.Add(1)
		}
		if write {
			if _, err := executor.Await(ctx, ex, h.Fenced(&task.DeleteRequest{Path: writerMark, Version: task.AnyVersion})); err != nil {
				return err
			}
			writes.Add(1)
		} else {
			reads.Add(1)
		}
		return nil
	}
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load() || writes.Load()+reads.Load() < minHolds; n++ {
				if err := section(i, m, (i+n)%3 == 0); err != nil {
					errs[i] = fmt.Errorf("client %d: %w", i, err)
					return
				}
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
	t.Logf("ours: %d write and %d read holds, %d of them with a Curator contender in the queue", writes.Load(), reads.Load(), sawCurator.Load())
	if cr.r.Holds != curatorClients*curatorOps || cr.r.Errors != 0 {
		t.Fatalf("curator side: %d holds, %d errors; want %d holds", cr.r.Holds, cr.r.Errors, curatorClients*curatorOps)
	}
	if sawCurator.Load() == 0 || writes.Load() == 0 || reads.Load() == 0 {
		t.Fatal("our holders never saw a Curator contender queued, or never wrote or read: the two sides did not contend")
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

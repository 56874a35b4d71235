package seqid_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// realOpts: sessions may last up to 10s, so a re-election after a killed
// member does not expire them (expiry is handled anyway).
var realOpts = zkserver.Options{MaxSessionTimeout: 10 * time.Second}

// drawAll runs one goroutine per generator, each drawing n IDs (after
// each, tick is called with the total drawn so far), and checks that no
// ID repeats. It returns the largest ID.
func drawAll(t *testing.T, ctx context.Context, gens []*seqid.Client, n int, tick func(total int64)) int64 {
	t.Helper()
	var (
		wg    sync.WaitGroup
		total atomic.Int64
		got   = make([][]int64, len(gens))
		errs  = make([]error, len(gens))
	)
	for i, g := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				id, err := g.Next(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], id)
				if tick != nil {
					tick(total.Add(1))
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	var hi int64
	for i, ids := range got {
		for j, id := range ids {
			if prev, dup := seen[id]; dup {
				t.Fatalf("id %d handed out twice (generators %d and %d)", id, prev, i)
			}
			if j > 0 && id <= ids[j-1] {
				t.Fatalf("generator %d: ids not increasing: %d after %d", i, id, ids[j-1])
			}
			seen[id] = i
			hi = max(hi, id)
		}
	}
	if len(seen) != n*len(gens) {
		t.Fatalf("%d ids, want %d", len(seen), n*len(gens))
	}
	return hi
}

func nodeValue(t *testing.T, ctx context.Context, ex *executor.Executor, path string) int64 {
	t.Helper()
	d, err := executor.Await(ctx, ex, task.Get(path))
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	v, err := seqid.Decode(d.Data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Several generators, each on its own session and executor, on a real
// standalone server: two by compare-and-set per ID, two from blocks.
func TestRealStandaloneConcurrent(t *testing.T) { realStandaloneConcurrent(t, false) }

// TestRealStandaloneConcurrent with every session under a chroot
// (realtest.Chroot).
func TestRealStandaloneConcurrentUnderRoot(t *testing.T) { realStandaloneConcurrent(t, true) }

func realStandaloneConcurrent(t *testing.T, underRoot bool) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chroot := realtest.Chroot(t, ctx, srv.Addrs(), underRoot)
	const path = "/real-seq"
	var gens []*seqid.Client
	for i := range 4 {
		ex := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{Root: chroot}).Ex
		g, err := seqid.NewClient(ex, path, []int64{1, 1, 7, 10}[i])
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
	}
	hi := drawAll(t, ctx, gens, 150, nil)
	check := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{Root: chroot}).Ex
	if v := nodeValue(t, ctx, check, path); v < hi {
		t.Fatalf("node at %d, below the highest id %d", v, hi)
	}
}

// A 3-server ensemble; the leader is killed mid-run and restarted: every
// worker finishes and no ID repeats.
func TestRealEnsembleMemberKilled(t *testing.T) {
	zkserver.Require(t)
	ens := zkserver.Ensemble(t, 3, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const path = "/real-seq-ens"
	var gens []*seqid.Client
	for i := range 4 {
		ex := realtest.Dial(t, ctx, ens.Addrs(), realtest.Options{}).Ex
		g, err := seqid.NewClient(ex, path, []int64{1, 1, 5, 5}[i])
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
	}
	const n = 120
	var (
		once      sync.Once
		killed    = -1
		restarted = make(chan error, 1)
	)
	hi := drawAll(t, ctx, gens, n, func(total int64) {
		if total < int64(n*len(gens)/3) {
			return
		}
		once.Do(func() {
			killed = ens.Leader(ctx)
			if killed < 0 {
				killed = 0
			}
			ens.Kill(killed)
			go func() { restarted <- ens.Restart(ctx, killed) }()
		})
	})
	if killed < 0 {
		t.Fatal("no server was killed")
	}
	if err := <-restarted; err != nil {
		t.Fatalf("restart server %d: %v", killed, err)
	}
	check := realtest.Dial(t, ctx, ens.Addrs(), realtest.Options{}).Ex
	if v := nodeValue(t, ctx, check, path); v < hi {
		t.Fatalf("node at %d, below the highest id %d", v, hi)
	}
}

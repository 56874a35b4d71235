package idpersist_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// realReplica runs a replica on ex until the test ends; wait returns its
// Run's result once Run has returned.
func realReplica(t *testing.T, ex *executor.Executor, cfg idpersist.Config) (r *idpersist.Replica, wait func() error) {
	t.Helper()
	r, err := idpersist.NewReplica(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var res error
	go func() { defer close(done); res = r.Serve(ctx, ex) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r, func() error { <-done; return res }
}

// waitFor polls cond (every 20ms) until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		tk := time.NewTimer(20 * time.Millisecond)
		<-tk.C
	}
}

// A leader replica and a backup, generators on sessions of their own, on
// a real server. Mid-run the leader's connection is closed: the backup
// takes over, the generators finish, no ID repeats, and every ID was at or
// below the durable mark when it was handed out.
func TestRealLeaderClosedBackupTakesOver(t *testing.T) { realLeaderClosedBackupTakesOver(t, false) }

// TestRealLeaderClosedBackupTakesOver with every session under a chroot
// (realtest.Chroot).
func TestRealLeaderClosedBackupTakesOverUnderRoot(t *testing.T) {
	realLeaderClosedBackupTakesOver(t, true)
}

func realLeaderClosedBackupTakesOver(t *testing.T, underRoot bool) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{MaxSessionTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chroot := realtest.Chroot(t, ctx, srv.Addrs(), underRoot)
	store := newFileStore(t)
	cfg := idpersist.Config{Sequence: "/real/ids/seq", Limit: "/real/ids/limit", Election: "/real/ids/election",
		Store: store, Chunk: 20, LowWater: 5}

	var reps []*idpersist.Replica
	var closes []func()
	var results []func() error
	for range 2 {
		rc := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{Root: chroot})
		ex, cl := rc.Ex, rc.Stop
		r, res := realReplica(t, ex, cfg)
		reps, closes, results = append(reps, r), append(closes, cl), append(results, res)
	}
	waitFor(t, 20*time.Second, "a leader", func() bool { return reps[0].Leading() || reps[1].Leading() })
	first := 0
	if reps[1].Leading() {
		first = 1
	}

	const workers, n = 3, 100
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		seen    = map[int64]int{}
		hi      int64
		total   atomic.Int64
		errs    = make([]error, workers)
		once    sync.Once
		closedC = make(chan struct{})
	)
	record := func(w int, id int64) error {
		mark, err := store.Load()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := seen[id]; dup {
			t.Errorf("id %d handed out twice (workers %d and %d)", id, prev, w)
		}
		if id > mark {
			t.Errorf("id %d handed out above the durable mark %d", id, mark)
		}
		seen[id] = w
		hi = max(hi, id)
		return nil
	}
	for w := range workers {
		ex := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{Root: chroot}).Ex
		g, err := idpersist.NewClient(ex, cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				id, err := g.Next(ctx)
				if err == nil {
					err = record(w, id)
				}
				if err != nil {
					errs[w] = err
					return
				}
				if total.Add(1) >= workers*n/3 {
					once.Do(func() { closes[first](); close(closedC) })
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	<-closedC
	if err := results[first](); !errors.Is(err, task.ErrClosed) {
		t.Errorf("closed leader's Run returned %v, want ErrClosed", err)
	}
	backup := reps[1-first]
	waitFor(t, 20*time.Second, "the backup to lead", backup.Leading)
	if backup.Turns() < 1 {
		t.Fatalf("backup never led")
	}
	if len(seen) != workers*n {
		t.Fatalf("%d ids, want %d", len(seen), workers*n)
	}

	// The backup still leads and may raise the mark and then the limit at
	// any moment: read the nodes first and the mark after them (the mark
	// only grows, and is raised before the limit), so each node's value
	// is compared with a mark at least as new as it.
	ex := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{Root: chroot}).Ex
	vals := map[string]int64{}
	for _, p := range []string{cfg.Sequence, cfg.Limit} {
		d, err := executor.Await(ctx, ex, task.Get(p))
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		v, err := seqid.Decode(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		vals[p] = v
	}
	mark, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	for p, v := range vals {
		if v > mark {
			t.Errorf("%s at %d, above the durable mark %d", p, v, mark)
		}
		if p == cfg.Sequence && v < hi {
			t.Errorf("sequence at %d, below the highest id %d", v, hi)
		}
	}
	if hi > mark {
		t.Errorf("highest id %d above the durable mark %d", hi, mark)
	}
}

// Dynamic sequences on a real server: a sequence added while the leader
// runs is served with IDs bounded by its own mark; a removed one has its
// limit node deleted and is retired.
func TestRealDynamicSequences(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{MaxSessionTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stores, err := idpersist.NewDirStores(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := idpersist.Config{Parent: "/real/all-sequences", Limits: "/real/all-limits", Election: "/real/election",
		Stores: stores, Chunk: 15, LowWater: 5}
	lex := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{}).Ex
	r, _ := realReplica(t, lex, cfg)
	waitFor(t, 20*time.Second, "a leader", r.Leading)

	ex := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{}).Ex
	live := func(name string) bool {
		names, err := stores.Names()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(names, name)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := executor.Await(ctx, ex, task.Create(cfg.Parent+"/"+name, seqid.Encode(0), task.Persistent)); err != nil {
			t.Fatal(err)
		}
		g, err := idpersist.NewClient(ex, cfg.Named(name))
		if err != nil {
			t.Fatal(err)
		}
		mark, err := stores.Mark(name)
		if err != nil {
			t.Fatal(err)
		}
		var prev int64
		for range 40 {
			id, err := g.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			m, err := mark.Load()
			if err != nil {
				t.Fatal(err)
			}
			if id <= prev || id > m {
				t.Fatalf("%s: id %d after %d, durable mark %d", name, id, prev, m)
			}
			prev = id
		}
	}
	if _, err := executor.Await(ctx, ex, task.Delete(cfg.Parent+"/a", task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "a retired", func() bool { return !live("a") })
	if st, err := executor.Await(ctx, ex, task.Exists(cfg.Limits+"/a")); err != nil || st == nil {
		t.Fatalf("limit of the removed sequence (kept): %v, %v", st, err)
	}
	if !live("b") || r.Turns() != 1 {
		t.Fatalf("b live %v, leader turns %d", live("b"), r.Turns())
	}
}

// On a 3-server ensemble: replicas and generators run while the
// ensemble's leader server is killed and restarted; then every server is
// killed, loses its data and comes back empty. No process restarts: the
// servers refuse every client (each has seen a later zxid than theirs)
// until the clients give their sessions up and open new ones
// (zkadapter), the leader replica restores the sequence from its durable
// mark, the generators go on, and no ID is ever handed out twice or above
// the durable mark, and every ID after the wipe is above every ID before.
// The time from the servers' return to the first ID is logged.
func TestRealEnsembleKilledAndWiped(t *testing.T) {
	zkserver.Require(t)
	ens := zkserver.Ensemble(t, 3, zkserver.Options{MaxSessionTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store := newFileStore(t)
	cfg := idpersist.Config{Sequence: "/ens/ids/seq", Limit: "/ens/ids/limit", Election: "/ens/ids/election",
		Store: store, Chunk: 20, LowWater: 5}
	const sessionTimeout = 4 * time.Second
	for range 2 {
		realReplica(t, realtest.Dial(t, ctx, ens.Addrs(), realtest.Options{SessionTimeout: sessionTimeout}).Ex, cfg)
	}

	const workers = 3
	var (
		mu      sync.Mutex
		seen    = map[int64]int{}
		hi      int64
		beforeW int64 // the highest ID handed out before the wipe
	)
	gens := make([]*idpersist.Client, workers)
	for w := range gens {
		ex := realtest.Dial(t, ctx, ens.Addrs(), realtest.Options{SessionTimeout: sessionTimeout}).Ex
		g, err := idpersist.NewClient(ex, cfg)
		if err != nil {
			t.Fatal(err)
		}
		gens[w] = g
	}
	draw := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w, g := range gens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					id, err := g.Next(ctx)
					if err != nil {
						errs[w] = err
						return
					}
					mark, err := store.Load()
					if err != nil {
						errs[w] = err
						return
					}
					mu.Lock()
					if prev, dup := seen[id]; dup {
						t.Errorf("id %d handed out twice (workers %d and %d)", id, prev, w)
					}
					if id > mark {
						t.Errorf("id %d handed out above the durable mark %d", id, mark)
					}
					seen[id] = w
					hi = max(hi, id)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}

	draw(30)
	leader := ens.Leader(ctx)
	if leader < 0 {
		t.Fatal("no leader server")
	}
	ens.Kill(leader)
	draw(30) // two servers of three keep serving
	if err := ens.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	draw(30)

	mu.Lock()
	beforeW = hi
	mu.Unlock()
	for i := range ens.Len() {
		ens.Kill(i)
	}
	for i := range ens.Len() {
		if err := ens.Wipe(i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ens.Len() {
		if err := ens.Start(i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ens.Len() {
		if err := ens.WaitServing(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	// The same processes, the same clients: the first ID after the servers
	// came back.
	back := time.Now()
	draw(1)
	firstAfter := time.Since(back)
	mu.Lock()
	before := len(seen)
	mu.Unlock()
	draw(30)

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != before+workers*30 || before != workers*91 {
		t.Fatalf("%d ids in all (%d before the wipe), want %d", len(seen), before, workers*121)
	}
	low := int64(-1)
	for id := range seen {
		if id > beforeW && (low < 0 || id < low) {
			low = id
		}
	}
	after := 0
	for id := range seen {
		if id > beforeW {
			after++
		}
	}
	if after != workers*31 {
		t.Errorf("%d ids after the wipe above the last one before it (%d), want %d: IDs did not resume above every ID issued", after, beforeW, workers*31)
	}
	mark, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if hi > mark {
		t.Errorf("highest id %d above the durable mark %d", hi, mark)
	}
	t.Logf("ensemble: %d ids, leader server %d killed and restarted, every server wiped; before the wipe up to %d, after from %d; durable mark %d; first ids %s after the servers came back (session timeout %s)",
		len(seen), leader, beforeW, low, mark, firstAfter.Round(time.Millisecond), sessionTimeout)
}

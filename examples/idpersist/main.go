// Command idpersist runs the reserved-ID persistence service of
// recipes/idpersist: a few replicas elect a leader that keeps a reserved
// limit for the sequence and makes it durable in a file (a FileStore in a
// temporary directory) before any generator may pass it; workers draw IDs
// below that limit. Halfway, on the embedded server, every server's data
// is wiped (a total ensemble loss): the replicas elect a leader again,
// which restores the sequence from the durable mark, and the IDs resume
// above it. On a real server the wipe is skipped (it cannot be done to a
// server from a client) and the leading replica's client is killed
// instead, so a backup takes over. It checks that no ID repeats and that
// every ID is at most the durable mark, prints a summary, and exits 1 if
// a check failed.
//
//	go run ./examples/idpersist                  # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/idpersist -zk host:2181    # a real server or ensemble
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/idpersist"
)

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("idpersist", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded fakezk")
	nReplicas := fs.Int("replicas", 3, "persistence replicas, each with its own session (at least 2)")
	nWorkers := fs.Int("workers", 3, "workers drawing IDs, each with its own session")
	ids := fs.Int("ids", 40, "IDs each worker draws, half before the fault and half after")
	chunk := fs.Int64("chunk", 20, "how far above the sequence the leader reserves")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nReplicas < 2 || *nWorkers < 1 || *ids < 2 || *chunk < 1 || fs.NArg() > 0 {
		return errors.New("want -replicas >= 2, -workers >= 1, -ids >= 2, -chunk >= 1 and no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+*servers, fmt.Sprintf("/idpersist-example-%x", rand.Uint64())
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", *seed), "/idpersist-example"
	}
	dir, err := os.MkdirTemp("", "idpersist-example")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := idpersist.NewFileStore(filepath.Join(dir, "ids.mark"))
	if err != nil {
		return err
	}
	cfg := idpersist.Config{Sequence: root + "/seq", Limit: root + "/limit", Election: root + "/election",
		Store: store, Chunk: *chunk}
	fmt.Fprintf(out, "%s, %d replicas, %d workers, mark in %s\n", where, *nReplicas, *nWorkers, store.Path())
	// The cleaner, the run's first session, deletes the run's nodes at the
	// end, whatever happened: deferred first, cleanUp runs last, once every
	// other process has stopped. (The wipe on the embedded server refuses
	// its session too; its executor goes on on a new one, as the others'.)
	cleaner, err := start(ctx, srv, *servers)
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	var (
		running sync.WaitGroup
		procs   []*process
	)
	defer func() {
		for _, p := range procs {
			p.stop() // ends the replicas' Serve too
		}
		running.Wait()
	}()
	replicas := make([]*idpersist.Replica, *nReplicas)
	replicaClients := make([]*process, *nReplicas)
	for i := range replicas {
		if replicaClients[i], err = start(ctx, srv, *servers); err != nil {
			return err
		}
		procs = append(procs, replicaClients[i])
		if replicas[i], err = idpersist.NewReplica(cfg); err != nil {
			return err
		}
		running.Add(1)
		go func() { defer running.Done(); _ = replicas[i].Serve(ctx, replicaClients[i].ex) }()
	}
	gens := make([]*idpersist.Client, *nWorkers)
	for i := range gens {
		c, err := start(ctx, srv, *servers)
		if err != nil {
			return err
		}
		procs = append(procs, c)
		if gens[i], err = idpersist.NewClient(c.ex, cfg); err != nil {
			return err
		}
	}
	// draw has every worker draw n IDs at once.
	draw := func(n int) ([]int64, error) {
		var mu sync.Mutex
		var got []int64
		errs := make([]error, len(gens))
		var wg sync.WaitGroup
		for i, g := range gens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					id, err := g.Next(ctx)
					if err != nil {
						errs[i] = fmt.Errorf("worker %d: %w", i+1, err)
						return
					}
					mu.Lock()
					got = append(got, id)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return got, errors.Join(errs...)
	}

	first, err := draw(*ids / 2)
	if err != nil {
		return err
	}
	before, err := store.Load()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "1. %d IDs drawn up to %d; durable mark %d\n", len(first), slices.Max(first), before)
	var failed []string
	turns := make([]int64, len(replicas))
	for i, r := range replicas {
		turns[i] = r.Turns()
	}
	killed := -1
	if srv != nil {
		fmt.Fprintln(out, "2. fault: every server's data is wiped (total ensemble loss)")
		fmt.Fprintf(out, "   as ZooKeeper does, the servers refuse the clients (they saw zxids the wiped servers never had)\n"+
			"   until more than their session timeout (%v) has passed; then each gets a new session\n", sessionTimeout)
		srv.Wipe()
	} else {
		for i, r := range replicas {
			if r.Leading() && killed < 0 {
				killed = i
			}
		}
		if killed < 0 {
			return errors.New("no replica leads")
		}
		fmt.Fprintf(out, "2. real server: no wipe (a client cannot wipe a server); replica %d, the leader, is killed\n", killed+1)
		replicaClients[killed].stop()
	}
	second, err := draw(*ids - *ids/2)
	if err != nil {
		return err
	}
	mark, err := store.Load()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "3. %d more IDs drawn, from %d up to %d; durable mark %d\n", len(second), slices.Min(second), slices.Max(second), mark)

	// The checks.
	all := slices.Sorted(slices.Values(append(first, second...)))
	distinct := len(slices.Compact(slices.Clone(all)))
	if distinct != len(all) {
		failed = append(failed, fmt.Sprintf("%d IDs drawn more than once", len(all)-distinct))
	}
	if hi := all[len(all)-1]; hi > mark {
		failed = append(failed, fmt.Sprintf("ID %d above the durable mark %d", hi, mark))
	}
	if killed < 0 && slices.Min(second) <= before {
		failed = append(failed, fmt.Sprintf("after the wipe ID %d is not above the mark %d", slices.Min(second), before))
	}
	took := 0
	for i, r := range replicas {
		fmt.Fprintf(out, "  replica %d led %d time(s)\n", i+1, r.Turns())
		if i != killed && r.Turns() > turns[i] {
			took++
		}
	}
	if took == 0 {
		failed = append(failed, "no replica led after the fault")
	}
	fmt.Fprintf(out, "summary\n  %d IDs, %d distinct, all at most the durable mark %d\n", len(all), distinct, mark)
	if killed < 0 {
		fmt.Fprintf(out, "  after the wipe IDs resumed at %d, above the mark %d made durable before it\n", slices.Min(second), before)
	} else {
		fmt.Fprintf(out, "  a backup took over from replica %d\n", killed+1)
	}
	if n := backgroundErrors.Load(); n > 0 {
		failed = append(failed, fmt.Sprintf("%d background flows failed (logged above)", n))
	}
	for _, f := range failed {
		fmt.Fprintln(out, "  FAILED:", f)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d check(s) failed", len(failed))
	}
	return nil // cleanUp says OK
}

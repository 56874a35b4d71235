// Command cache shows a ChildrenCache following a directory of workers:
// worker sessions register ephemeral nodes, leave, and come back (the same
// name, a new node); the cache, on a session of its own, reports after
// each step what was added, removed and re-created since its last read
// (Next). On the embedded server the cache's session is expired while a
// worker comes and goes: on the new session the cache reads everything
// again and reports the difference. It checks that every report matches
// the step and that the cache ends equal to the server's listing (names
// and czxids), prints a summary, and exits 1 if a check failed.
//
//	go run ./examples/cache                 # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/cache -zk host:2181   # a real server or ensemble
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/task"
)

type options struct {
	servers string // -zk
	seed    uint64
	workers int
	timeout time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := new(options)
	fs := flag.NewFlagSet("cache", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.servers, "zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the embedded fakezk")
	fs.IntVar(&o.workers, "workers", 3, "workers, each with its own session (at least 2)")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.workers < 2 {
		return o, fmt.Errorf("-workers must be at least 2")
	}
	return o, nil
}

func names(ns []cache.Node) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.Name())
	}
	return out
}

// await reads changes with next until a change reports the snapshot want
// (names, in any order), and returns what was added, removed and re-created
// over those reads. It waits on the reports, not on the cache's Current:
// Current may already hold a change that no Next has reported yet.
func await(ctx context.Context, next func(context.Context) (cache.Change, error), out io.Writer, want ...string) (added, removed, recreated []string, err error) {
	want = slices.Sorted(slices.Values(want))
	for got := []string(nil); got == nil || !slices.Equal(got, want); {
		ch, err := next(ctx)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("waiting for %v: %w", want, err)
		}
		got = names(ch.Nodes)
		fmt.Fprintf(out, "  cache: workers %v (added %v, removed %v, re-created %v)\n",
			got, names(ch.Added), names(ch.Removed), names(ch.Recreated))
		added = append(added, names(ch.Added)...)
		removed = append(removed, names(ch.Removed)...)
		recreated = append(recreated, names(ch.Recreated)...)
	}
	return added, removed, recreated, nil
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+o.servers, fmt.Sprintf("/cache-example-%x", rand.Uint64())
	if o.servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: o.seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", o.seed), "/cache-example"
	}
	dir := root + "/workers"
	fmt.Fprintf(out, "%s, %d workers, directory %s\n", where, o.workers, dir)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, o.servers)
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	cs, err := start(ctx, srv, o.servers)
	if err != nil {
		return err
	}
	defer cs.stop()
	if _, err := executor.Await(ctx, cs.ex, task.Create(task.Parent(dir), nil, task.Persistent)); err != nil {
		return err
	}
	if _, err := executor.Await(ctx, cs.ex, task.Create(dir, nil, task.Persistent)); err != nil {
		return err
	}
	w, err := cache.NewChildrenClient(cs.ex, dir, cache.WithData())
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil { // returns once the first snapshot is read
		return err
	}
	defer w.Stop(ctx)

	var checks Checks
	check := checks.Check
	await := func(want ...string) (added, removed, recreated []string, err error) {
		return await(ctx, w.Next, out, want...)
	}

	fmt.Fprintln(out, "1. workers register")
	ids := make([]string, o.workers)
	ws := make([]*process, o.workers)
	register := func(i int) error {
		_, err := executor.Await(ctx, ws[i].ex, task.Create(dir+"/"+ids[i], []byte(fmt.Sprintf("10.0.0.%d", i+1)), task.Ephemeral))
		return err
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("w%d", i+1)
		if ws[i], err = start(ctx, srv, o.servers); err != nil {
			return err
		}
		defer ws[i].stop()
		if err := register(i); err != nil {
			return err
		}
	}
	added, _, _, err := await(ids...)
	if err != nil {
		return err
	}
	slices.Sort(added)
	check(slices.Equal(added, ids), "every worker reported added: %v", added)

	fmt.Fprintf(out, "2. %s leaves (its session closes)\n", ids[0])
	ws[0].stop()
	_, removed, _, err := await(ids[1:]...)
	if err != nil {
		return err
	}
	check(slices.Equal(removed, ids[:1]), "%s reported removed: %v", ids[0], removed)

	fmt.Fprintf(out, "3. %s re-registers at once on a new session: the same name, another node\n", ids[1])
	old := ws[1]
	if ws[1], err = start(ctx, srv, o.servers); err != nil {
		return err
	}
	defer ws[1].stop()
	if _, err := executor.Await(ctx, old.ex, task.Delete(dir+"/"+ids[1], -1)); err != nil {
		return err
	}
	if err := register(1); err != nil {
		return err
	}
	old.stop()
	_, removed, recreated, err := await(ids[1:]...)
	if err != nil {
		return err
	}
	// A read between the delete and the create reports removed then added;
	// otherwise one re-created.
	check(slices.Equal(recreated, ids[1:2]) || slices.Equal(removed, ids[1:2]), "%s reported re-created (or removed and added): re-created %v, removed %v", ids[1], recreated, removed)

	if srv != nil {
		fmt.Fprintf(out, "4. the cache's session expires while %s comes back and %s goes\n", ids[0], ids[2])
		srv.Expire(cs.conn.(*fakezk.Conn))
		if ws[0], err = start(ctx, srv, o.servers); err != nil {
			return err
		}
		defer ws[0].stop()
		if err := register(0); err != nil {
			return err
		}
		ws[2].stop()
		want := append([]string{ids[0], ids[1]}, ids[3:]...)
		added, removed, _, err := await(want...)
		if err != nil {
			return err
		}
		check(slices.Contains(added, ids[0]) && slices.Contains(removed, ids[2]),
			"after the new session: %s added and %s removed", ids[0], ids[2])
	}

	// The cache agrees with the server, node for node.
	cl, err := executor.Await(ctx, cs.ex, task.Children(dir))
	if err != nil {
		return err
	}
	server := slices.Sorted(slices.Values(cl.Names))
	check(slices.Equal(names(w.Current()), server), "the cache %v is the server's listing %v", names(w.Current()), server)
	same := true
	for _, n := range w.Current() {
		st, err := executor.Await(ctx, cs.ex, task.Exists(n.Path))
		if err != nil {
			return err
		}
		same = same && st != nil && st.Czxid == n.Stat.Czxid
	}
	check(same, "every cached node is the server's node (same czxid)")

	checks.Check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	return checks.Report(out)
}

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
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zkflow/zkflow/examples/internal/target"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/idpersist"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "idpersist:", err)
		os.Exit(1)
	}
}

type options struct {
	tg       target.Target
	replicas int
	workers  int
	ids      int
	chunk    int64
	timeout  time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("idpersist", flag.ContinueOnError)
	fs.SetOutput(out)
	o.tg.Register(fs)
	fs.IntVar(&o.replicas, "replicas", 3, "persistence replicas, each with its own session (at least 2)")
	fs.IntVar(&o.workers, "workers", 3, "workers drawing IDs, each with its own session")
	fs.IntVar(&o.ids, "ids", 40, "IDs each worker draws, half before the fault and half after")
	fs.Int64Var(&o.chunk, "chunk", 20, "how far above the sequence the leader reserves")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.replicas < 2 || o.workers < 1 || o.ids < 2 || o.chunk < 1 || fs.NArg() > 0 {
		return nil, errors.New("want -replicas >= 2, -workers >= 1, -ids >= 2, -chunk >= 1 and no arguments")
	}
	return o, nil
}

// client is one process: a session and the executor running its flows.
type client struct {
	ex   *executor.Executor
	stop context.CancelFunc
	done chan struct{}
}

func connect(ctx context.Context, tg *target.Target) (*client, error) {
	conn, err := tg.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cfg := executor.Config{Conn: conn, OnError: func(error) {}}
	if srv := tg.Embedded(); srv != nil {
		cfg.Clock = srv.Clock()
	}
	ex, err := executor.New(cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	c := &client{ex: ex, stop: stop, done: make(chan struct{})}
	go func() { defer close(c.done); _ = ex.Run(ctx) }()
	return c, nil
}

// kill stops the client as a crash would: its session closes, taking its
// ephemeral nodes.
func (c *client) kill() { c.stop(); <-c.done }

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	defer o.tg.Close()
	dir, err := os.MkdirTemp("", "idpersist-example")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := idpersist.NewFileStore(filepath.Join(dir, "ids.mark"))
	if err != nil {
		return err
	}
	root := o.tg.Root("idpersist-example")
	cfg := idpersist.Config{Sequence: root + "/seq", Limit: root + "/limit", Election: root + "/election",
		Store: store, Chunk: o.chunk}
	fmt.Fprintf(out, "%s, %d replicas, %d workers, mark in %s\n", o.tg.Describe(), o.replicas, o.workers, store.Path())

	var clients []*client
	var running sync.WaitGroup
	defer func() {
		for _, c := range clients {
			c.kill() // ends the replicas' Run too
		}
		running.Wait()
	}()
	open := func() (*client, error) {
		c, err := connect(ctx, &o.tg)
		if err == nil {
			clients = append(clients, c)
		}
		return c, err
	}
	replicas := make([]*idpersist.Replica, o.replicas)
	replicaClients := make([]*client, o.replicas)
	for i := range replicas {
		if replicaClients[i], err = open(); err != nil {
			return err
		}
		if replicas[i], err = idpersist.NewReplica(cfg); err != nil {
			return err
		}
		running.Add(1)
		go func() { defer running.Done(); _ = replicas[i].Run(ctx, replicaClients[i].ex) }()
	}
	gens := make([]*idpersist.Generator, o.workers)
	for i := range gens {
		c, err := open()
		if err != nil {
			return err
		}
		if gens[i], err = idpersist.NewGenerator(c.ex, cfg); err != nil {
			return err
		}
	}
	// draw has every worker draw n IDs at once.
	draw := func(n int) ([]int64, error) {
		var mu sync.Mutex
		var ids []int64
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
					ids = append(ids, id)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return ids, errors.Join(errs...)
	}

	first, err := draw(o.ids / 2)
	if err != nil {
		return err
	}
	before, err := store.Load()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "1. %d IDs drawn up to %d; durable mark %d\n", len(first), maxOf(first), before)
	var failed []string
	turns := make([]int64, len(replicas))
	for i, r := range replicas {
		turns[i] = r.Turns()
	}
	killed := -1
	if srv := o.tg.Embedded(); srv != nil {
		fmt.Fprintln(out, "2. fault: every server's data is wiped (total ensemble loss)")
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
		replicaClients[killed].kill()
	}
	second, err := draw(o.ids - o.ids/2)
	if err != nil {
		return err
	}
	mark, err := store.Load()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "3. %d more IDs drawn, from %d up to %d; durable mark %d\n", len(second), minOf(second), maxOf(second), mark)

	// The checks.
	seen := map[int64]bool{}
	for _, id := range append(first, second...) {
		if seen[id] {
			failed = append(failed, fmt.Sprintf("ID %d drawn twice", id))
		}
		seen[id] = true
	}
	if hi := max(maxOf(first), maxOf(second)); hi > mark {
		failed = append(failed, fmt.Sprintf("ID %d above the durable mark %d", hi, mark))
	}
	if killed < 0 && minOf(second) <= before {
		failed = append(failed, fmt.Sprintf("after the wipe ID %d is not above the mark %d", minOf(second), before))
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
	fmt.Fprintf(out, "summary\n  %d IDs, %d distinct, all at most the durable mark %d\n", len(first)+len(second), len(seen), mark)
	if killed < 0 {
		fmt.Fprintf(out, "  after the wipe IDs resumed at %d, above the mark %d made durable before it\n", minOf(second), before)
	} else {
		fmt.Fprintf(out, "  a backup took over from replica %d\n", killed+1)
	}
	for _, f := range failed {
		fmt.Fprintln(out, "  FAILED:", f)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d check(s) failed", len(failed))
	}
	fmt.Fprintln(out, "OK")
	return nil
}

func maxOf(ids []int64) int64 {
	m := ids[0]
	for _, id := range ids {
		m = max(m, id)
	}
	return m
}

func minOf(ids []int64) int64 {
	m := ids[0]
	for _, id := range ids {
		m = min(m, id)
	}
	return m
}

// Command election runs leader election among a few candidates, each with
// its own session: one leads at a time, writes through a fenced multi, and
// steps down; the next in line takes over with a larger fencing token. It
// runs on an embedded ZooKeeper (fakezk) by default, or on a real server
// with -zk, and ends with a verified summary (exit 1 if a check failed).
//
//	go run ./examples/election
//	go run ./examples/election -zk host:2181
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("election", flag.ContinueOnError)
	fs.SetOutput(out)
	servers := fs.String("zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	seed := fs.Uint64("seed", 1, "seed of the embedded fakezk")
	candidates := fs.Int("candidates", 3, "candidates, each with its own session")
	terms := fs.Int("terms", 6, "terms of leadership to run")
	hold := fs.Duration("hold", 50*time.Millisecond, "how long each leader leads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *candidates < 2 || *terms < 1 || *hold < 0 || fs.NArg() > 0 {
		return errors.New("want -candidates >= 2, -terms >= 1, -hold >= 0 and no arguments")
	}
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+*servers, fmt.Sprintf("/election-%x", rand.Uint64())
	if *servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: *seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", *seed), "/election"
	}
	fmt.Fprintln(out, "election on", where)
	ctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	dir, state := root+"/candidates", root+"/state"

	var (
		mu      sync.Mutex
		acting  int // leaders acting right now: never more than one
		tokens  []int64
		failure error
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
		stop()
	}
	// Errors of background flows: those cut short when the example
	// closes its sessions at the end are expected; any other fails the
	// run.
	onError := func(err error) {
		if !errors.Is(err, task.ErrClosed) && !errors.Is(err, task.ErrSessionExpired) {
			fail(fmt.Errorf("background flow: %w", err))
		}
	}
	// The admin, the run's first session, creates the node the leaders
	// write and, at the end, deletes the run's nodes whatever happened:
	// deferred first, cleanUp runs last, once every candidate has stopped.
	admin, stopAdmin, err := start(ctx, srv, *servers, onError)
	if err != nil {
		return err
	}
	defer stopAdmin()
	defer func() { err = cleanUp(ctx, admin, root, err, out) }()
	for _, p := range []string{root, state} {
		if _, err := executor.Await(ctx, admin, task.Create(p, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}
	for i := range *candidates {
		name := fmt.Sprintf("candidate %d", i)
		ex, stopEx, err := start(ctx, srv, *servers, onError)
		if err != nil {
			return err
		}
		defer stopEx()
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := election.NewClient(ex, dir, election.WithData([]byte(name)))
			if err != nil {
				fail(err)
				return
			}
			for ctx.Err() == nil {
				l, err := e.Campaign(ctx)
				if err != nil {
					continue // ctx ended, or the session did: campaign again
				}
				mu.Lock()
				acting++
				if acting > 1 {
					failure = fmt.Errorf("two acting leaders (%s joined)", name)
				}
				tokens = append(tokens, l.Token())
				term := len(tokens)
				fmt.Fprintf(out, "term %d: %s leads, token %d\n", term, name, l.Token())
				mu.Unlock()
				// The leader's work: a write that ZooKeeper refuses if we
				// are no longer leader, then a while on the executor's clock.
				write := l.Fenced(task.SetOp(state, fmt.Appendf(nil, "term %d", term), task.AnyVersion))
				if _, err := executor.Await(ctx, ex, combinators.Seq(write, combinators.Sleep(*hold))); err != nil && ctx.Err() == nil {
					fail(fmt.Errorf("term %d: %w", term, err))
				}
				mu.Lock()
				acting--
				mu.Unlock()
				// Once the run is over the sessions close, taking the node.
				if err := e.Resign(context.Background(), l); err != nil && ctx.Err() == nil {
					fail(err)
				}
				if term >= *terms {
					stop()
				}
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()

	ok := failure == nil && len(tokens) >= *terms
	for k := 1; k < len(tokens); k++ {
		if tokens[k] <= tokens[k-1] {
			ok = false
			fmt.Fprintf(out, "FAILED: token %d after %d\n", tokens[k], tokens[k-1])
		}
	}
	if failure != nil {
		fmt.Fprintln(out, "FAILED:", failure)
	}
	fmt.Fprintf(out, "%d terms, one leader at a time, tokens increasing\n", len(tokens))
	if !ok {
		return errors.New("checks failed")
	}
	return nil // cleanUp says OK
}

package election_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// This election and Apache Curator's LeaderLatch (Debian's Curator 5.4,
// driven by the peer program bench/peers/curator in its latchinterop mode)
// campaign in one directory of a server, real and fakezk on the wire
// (interop.Run), and never lead at once. Each
// leader, on either side, creates one ephemeral marker node while it leads
// and deletes it before giving the leadership up: a second leader at the
// same time would find the marker there (NodeExists). Curator's side exits
// with status 3 if it does, ours fails the test; ours writes the marker
// with fenced writes, so a leadership that ended cannot touch it. While
// leading, our leaders also count Curator's candidates queued behind them:
// the two recipes really queue together, in one order.
func TestCuratorLeaderLatchInterop(t *testing.T) {
	prog, err := peers.BuildCurator(peers.DefaultCacheDir())
	if errors.Is(err, peers.ErrUnavailable) && os.Getenv("ZK_REQUIRED") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	interop.Run(t, realOpts, func(t *testing.T, srv interop.Server) { curatorLatchInterop(t, prog, srv) })
}

func curatorLatchInterop(t *testing.T, prog *peers.Program, srv interop.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const dir, marker = "/latch-interop/election", "/latch-interop-marker"
	const curatorClients, curatorOps, ours, minTerms = 3, 30, 3, 15

	exs := make([]*executor.Executor, ours)
	sessions := map[int64]bool{}
	for i := range exs {
		c := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{SessionTimeout: 4 * time.Second})
		exs[i] = c.Ex
		id, err := executor.Await(ctx, c.Ex, task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { k(s.Session().ID, nil) }))
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
		r, err := prog.Run(ctx, peers.Params{Server: srv.Addrs()[0], Scenario: "latchinterop", Clients: curatorClients, Ops: curatorOps,
			Path: dir, Marker: marker}, nil)
		curatorDone <- curatorRun{r, err}
	}()

	var (
		stop       atomic.Bool
		terms      atomic.Int64
		sawCurator atomic.Int64 // terms during which a Curator candidate was queued
		errs       = make([]error, ours)
		wg         sync.WaitGroup
	)
	for i, ex := range exs {
		e := mustElection(t, dir, election.WithData([]byte("ours")))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() || terms.Load() < minTerms {
				l, err := election.ClientOf(ex, e).Campaign(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				_, err = executor.Await(ctx, ex, l.Fenced(&task.CreateRequest{Path: marker, Mode: task.Ephemeral, ACL: task.OpenACL}))
				if errors.Is(err, task.ErrNodeExists) {
					errs[i] = errors.New("the marker exists while this candidate leads: two leaders")
					return
				}
				if err != nil {
					errs[i] = err
					return
				}
				if n, err := foreign(ctx, ex, dir, sessions); err != nil {
					errs[i] = err
					return
				} else if n > 0 {
					sawCurator.Add(1)
				}
				if _, err := executor.Await(ctx, ex, l.Fenced(&task.DeleteRequest{Path: marker, Version: task.AnyVersion})); err != nil {
					errs[i] = err
					return
				}
				if err := election.ClientOf(ex, nil).Resign(ctx, l); err != nil {
					errs[i] = err
					return
				}
				terms.Add(1)
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
	t.Logf("ours: %d terms, %d of them with a Curator candidate queued", terms.Load(), sawCurator.Load())
	if cr.r.Holds != curatorClients*curatorOps || cr.r.Errors != 0 {
		t.Fatalf("curator side: %d terms, %d errors; want %d terms", cr.r.Holds, cr.r.Errors, curatorClients*curatorOps)
	}
	if sawCurator.Load() == 0 {
		t.Fatal("our leaders never saw a Curator candidate queued: the two sides did not contend")
	}
}

// foreign counts the candidates in dir whose session is none of ours.
func foreign(ctx context.Context, ex *executor.Executor, dir string, ours map[int64]bool) (int, error) {
	kids, err := executor.Await(ctx, ex, task.Children(dir))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range kids.Names {
		if !strings.Contains(name, "latch-") {
			continue
		}
		st, err := executor.Await(ctx, ex, task.Exists(dir+"/"+name))
		if err != nil {
			return 0, err
		}
		if st != nil && !ours[st.EphemeralOwner] {
			n++
		}
	}
	return n, nil
}

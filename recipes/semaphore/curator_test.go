package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// This semaphore and Apache Curator's InterProcessSemaphoreV2 (Debian's
// Curator 5.4, driven by the peer program bench/peers/curator in its
// seminterop mode, SemInterop.java) share 2 leases on one path of a server
// (real and fakezk on the wire: interop.Run), 3 clients on each side, and never hold more than 2 together.
// Every holder, on either side, creates an ephemeral sequential marker
// under one directory while it holds its lease ("c-" for Curator, "z-"
// for ours), lists the directory (ours 5 times, Curator's 3: the hold
// lasts that long), and deletes its marker before it returns the lease: more than 2 markers would be more than 2 holders.
// Curator's side exits with status 3 if it sees that, ours fails the
// test; ours writes its markers with fenced writes, so a holder that lost
// its lease cannot. Our holders also count Curator's markers beside
// theirs: the two sides really hold leases at the same time, and really
// share them (a listing with a Curator marker and ours).
func TestCuratorInterop(t *testing.T) {
	prog := buildCurator(t)
	interop.Run(t, zkserver.Options{}, func(t *testing.T, srv interop.Server) {
		if err := curatorInterop(t, prog, srv); err != nil {
			t.Fatal(err)
		}
	})
}

// The check bites: with our acquirers holding among the first n+1
// (the canary semaphore/hold-among-n-plus-one), a listing on one side or
// the other sees more markers than leases, and the run ends at once.
func TestCuratorInteropCheckBites(t *testing.T) {
	prog := buildCurator(t)
	defer canary.Enable("semaphore/hold-among-n-plus-one")()
	err := curatorInterop(t, prog, interop.StartFake(t, zkserver.Options{}))
	if err == nil || !(strings.Contains(err.Error(), "more markers than leases") || strings.Contains(err.Error(), "OVERLAP")) {
		t.Fatalf("three holders of two leases not caught: %v", err)
	}
	t.Logf("caught: %v", err)
}

// buildCurator builds the Curator peer, or skips t when it cannot run here.
func buildCurator(t *testing.T) *peers.Program {
	prog, err := peers.BuildCurator(peers.DefaultCacheDir())
	if errors.Is(err, peers.ErrUnavailable) && os.Getenv("ZK_REQUIRED") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// curatorInterop runs TestCuratorInterop's contention on srv and returns
// what went wrong (a failure to set up fails t).
func curatorInterop(t *testing.T, prog *peers.Program, srv interop.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const path, markers, leases = "/sem-interop/sem", "/sem-interop-markers", 2
	const curatorClients, curatorOps, ours, minHolds, lists = 3, 40, 3, 30, 5

	ss := semaphores(t, ctx, srv.Addrs(), path, leases, ours)
	type curatorRun struct {
		r   peers.Result
		err error
	}
	curatorDone := make(chan curatorRun, 1)
	go func() {
		r, err := prog.Run(ctx, peers.Params{Server: srv.Addrs()[0], Scenario: "seminterop", Clients: curatorClients, Ops: curatorOps,
			Path: path, Marker: markers, Leases: leases}, nil)
		curatorDone <- curatorRun{r, err}
	}()

	var (
		stop      atomic.Bool
		holds     atomic.Int64
		together  atomic.Int64 // holds during which a Curator holder was inside too
		errs      = make([]error, ours)
		wg        sync.WaitGroup
		dirExists atomic.Bool
	)
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex := s.Executor()
			for !stop.Load() || holds.Load() < minHolds {
				l, err := s.Acquire(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				if !dirExists.Load() {
					if _, err := executor.Await(ctx, ex, task.Create(markers, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
						errs[i] = err
						return
					}
					dirExists.Store(true)
				}
				rs, err := executor.Await(ctx, ex, l.Fenced(&task.CreateRequest{Path: markers + "/z-", Mode: task.EphemeralSequential}))
				if err != nil {
					errs[i] = err
					return
				}
				// The hold lasts a few listings, each a check.
				beside := false
				for range lists {
					cl, err := executor.Await(ctx, ex, task.Children(markers))
					if err != nil {
						errs[i] = err
						return
					}
					if len(cl.Names) > leases {
						errs[i] = errors.New("more markers than leases: " + strings.Join(cl.Names, " "))
						return
					}
					for _, n := range cl.Names {
						beside = beside || strings.HasPrefix(n, "c-")
					}
				}
				if beside {
					together.Add(1)
				}
				if _, err := executor.Await(ctx, ex, l.Fenced(&task.DeleteRequest{Path: rs[0].Path, Version: task.AnyVersion})); err != nil {
					errs[i] = err
					return
				}
				if err := s.Release(ctx, l); err != nil {
					errs[i] = err
					return
				}
				holds.Add(1)
			}
		}()
	}
	// A failure on our side ends the run at once (its leases are never
	// returned, so Curator's side would wait for them).
	ourFail := make(chan struct{})
	go func() {
		wg.Wait()
		close(ourFail)
	}()
	var cr curatorRun
	select {
	case cr = <-curatorDone:
	case <-ourFail:
		if errors.Join(errs...) != nil {
			cancel()
		}
		cr = <-curatorDone
	}
	stop.Store(true)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if cr.err != nil {
		return fmt.Errorf("curator side: %w", cr.err)
	}
	t.Logf("curator: %s", peers.Format(cr.r))
	t.Logf("ours: %d holds, %d of them beside a Curator holder", holds.Load(), together.Load())
	if cr.r.Holds != curatorClients*curatorOps || cr.r.Errors != 0 {
		return fmt.Errorf("curator side: %d holds, %d errors; want %d holds", cr.r.Holds, cr.r.Errors, curatorClients*curatorOps)
	}
	if together.Load() == 0 {
		return errors.New("our holders never held beside a Curator holder: the two sides did not share the leases")
	}
	for _, d := range []string{path + "/leases", path + "/locks"} {
		cl, err := executor.Await(ctx, ss[0].Executor(), task.Children(d))
		if err != nil && !errors.Is(err, task.ErrNoNode) {
			return err
		}
		if len(cl.Names) != 0 {
			return fmt.Errorf("%s: nodes left: %v", d, cl.Names)
		}
	}
	return nil
}

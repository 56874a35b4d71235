package barrier_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// A double barrier for 4 sessions on a real server, over three rounds:
// in each, nobody passes Enter before all 4 have started it, and nobody
// returns from Leave before all 4 have started leaving; no participant
// node is left.
func TestRealDoubleBarrier(t *testing.T) { realDoubleBarrier(t, false) }

// TestRealDoubleBarrier with every session under a chroot
// (realtest.Chroot).
func TestRealDoubleBarrierUnderRoot(t *testing.T) { realDoubleBarrier(t, true) }

func realDoubleBarrier(t *testing.T, underRoot bool) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chroot := realtest.Chroot(t, ctx, srv.Addrs(), underRoot)
	const n, rounds = 4, 3
	root := fmt.Sprintf("/real-double-%016x", rand.Uint64())
	exs := make([]*executor.Executor, n)
	for i := range exs {
		exs[i] = realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{LogDetached: true, Root: chroot}).Ex
	}
	for r := range rounds {
		dir := fmt.Sprintf("%s/r%d", root, r)
		var arrived, leaving atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i, ex := range exs {
			d, err := barrier.NewDoubleClient(ex, dir, n)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				arrived.Add(1)
				p, err := d.Enter(ctx)
				if err != nil {
					errs <- fmt.Errorf("round %d participant %d: enter: %w", r, i, err)
					return
				}
				if a := arrived.Load(); a < n {
					errs <- fmt.Errorf("round %d participant %d passed Enter with %d of %d arrived", r, i, a, n)
				}
				leaving.Add(1)
				if err := d.Leave(ctx, p); err != nil {
					errs <- fmt.Errorf("round %d participant %d: leave: %w", r, i, err)
					return
				}
				if l := leaving.Load(); l < n {
					errs <- fmt.Errorf("round %d participant %d finished Leave with %d of %d leaving", r, i, l, n)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		cl, err := executor.Await(ctx, exs[0], task.Children(dir))
		if err != nil {
			t.Fatal(err)
		}
		if len(cl.Names) != 1 || cl.Names[0] != barrier.ReadyNode {
			t.Fatalf("round %d: children after the round %v, want only %s", r, cl.Names, barrier.ReadyNode)
		}
	}
}

// A barrier on a real server holds waiters on other sessions until it is
// removed, and a participant whose session is closed while it waits to
// enter leaves no node.
func TestRealBarrier(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := fmt.Sprintf("/real-barrier-%016x", rand.Uint64())
	ctl := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{LogDetached: true}).Ex
	g, err := barrier.NewClient(ctl, root+"/gate")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, []byte("hold")); err != nil {
		t.Fatal(err)
	}
	var removed atomic.Bool
	passed := make(chan error, 3)
	for range 3 {
		w, _ := barrier.NewClient(realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{LogDetached: true}).Ex, root+"/gate")
		go func() {
			err := w.Wait(ctx)
			if err == nil && !removed.Load() {
				err = fmt.Errorf("passed before the barrier was removed")
			}
			passed <- err
		}()
	}
	// The waiters are held through data changes; each change is a
	// wake-up they must not trust.
	for i := range 3 {
		if _, err := executor.Await(ctx, ctl, task.Set(root+"/gate", []byte{byte(i)}, task.AnyVersion)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-passed:
		t.Fatalf("a waiter returned while the barrier is up: %v", err)
	default:
	}
	removed.Store(true)
	if err := g.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-passed; err != nil {
			t.Fatal(err)
		}
	}

	// A participant waits to enter a barrier for 2; its executor is
	// closed (the session ends): no node is left.
	alone := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{})
	ex := alone.Ex
	if _, err := executor.Await(ctx, ctl, task.Create(root+"/double", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	d, _ := barrier.NewDoubleClient(ex, root+"/double", 2)
	entered := make(chan error, 1)
	go func() { _, err := d.Enter(ctx); entered <- err }()
	waitFor(t, ctx, ctl, root+"/double", 1)
	alone.Stop()
	if err := <-entered; err == nil {
		t.Fatal("enter succeeded alone")
	}
	waitFor(t, ctx, ctl, root+"/double", 0)
}

// waitFor waits, with a watch, until dir has n participant nodes.
func waitFor(t *testing.T, ctx context.Context, ex *executor.Executor, dir string, n int) {
	t.Helper()
	for {
		cw, err := executor.Await(ctx, ex, task.ChildrenW(dir))
		if err != nil {
			t.Fatal(err)
		}
		count := 0
		for _, name := range cw.Names {
			if len(name) > 3 && name[:3] == "_p_" {
				count++
			}
		}
		if count == n {
			return
		}
		if _, err := executor.Await(ctx, ex, cw.Watch.Wait()); err != nil {
			t.Fatal(err)
		}
	}
}

package queue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/internal/peers/zkqueue"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// This queue and ZooKeeper's own DistributedQueue (Debian's
// zookeeper-recipes-queue 3.8.0, driven by the Java program
// internal/peers/zkqueue) on one directory of a server, real and fakezk
// on the wire (interop.Run): first each direction alone (Java offers n/2
// and we take them; we put an item of priority -1 and n/2 of priority 0,
// Java takes n/2, all of priority 0, and we take the other), then both at
// once on another directory (the Java side offers n and takes n while
// ours puts n and takes n). Every item arrives
// exactly once across both sides. Run in each of our modes (at-least-once
// items are acknowledged).
func TestDistributedQueueInterop(t *testing.T) {
	prog, err := zkqueue.Build(peers.DefaultCacheDir())
	if errors.Is(err, zkqueue.ErrUnavailable) && os.Getenv("ZK_REQUIRED") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	interop.Run(t, realOpts, func(t *testing.T, srv interop.Server) { distributedQueueInterop(t, prog, srv) })
}

func distributedQueueInterop(t *testing.T, prog *zkqueue.Program, srv interop.Server) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := "/interop-" + mode.String()
			const n = 60
			cs, _ := clients(t, ctx, srv.Addrs(), dir, 2, queue.WithMode(mode))
			put := func(from, to int) error {
				for i := from; i < to; i++ {
					if _, err := cs[0].Put(ctx, fmt.Appendf(nil, "go-%d", i)); err != nil {
						return err
					}
				}
				return nil
			}
			take := func(k int) ([]string, error) {
				var got []string
				for range k {
					it, err := cs[1].Take(ctx)
					if err == nil && mode == queue.AtLeastOnce {
						err = cs[1].Ack(ctx, it)
					}
					if err != nil {
						return got, err
					}
					got = append(got, string(it.Data))
				}
				return got, nil
			}
			// Each direction alone first: Java's items taken by us only,
			// ours by Java only.
			if err := prog.Offer(ctx, srv.Addrs()[0], dir, n/2, "java", nil); err != nil {
				t.Fatal(err)
			}
			ourGot, err := take(n / 2)
			if err != nil {
				t.Fatal(err)
			}
			// An item of another priority first: DistributedQueue skips
			// it (it is ours only), and our next take gets it.
			if _, err := cs[0].PutPriority(ctx, []byte("go-urgent"), -1); err != nil {
				t.Fatal(err)
			}
			if err := put(0, n/2); err != nil {
				t.Fatal(err)
			}
			javaGot, err := prog.Take(ctx, srv.Addrs()[0], dir, n/2, nil)
			if err != nil {
				t.Fatal(err)
			}
			if urgent, err := take(1); err != nil || len(urgent) != 1 || urgent[0] != "go-urgent" {
				t.Fatalf("after DistributedQueue's takes we took %v (%v), want the priority -1 item it skips", urgent, err)
			}
			// Then both at once, each side putting and taking.
			var (
				wg                sync.WaitGroup
				javaMore, ourMore []string
				errs              [4]error
			)
			both, _ := clients(t, ctx, srv.Addrs(), dir+"-both", 2, queue.WithMode(mode))
			cs = both
			// The directory first: DistributedQueue's offer and take create
			// a missing directory and fail with NodeExists when another
			// client creates it at the same time (they do not catch it).
			if _, err := executor.Await(ctx, cs[0].Executor(), task.Create(dir+"-both", nil, task.Persistent)); err != nil {
				t.Fatal(err)
			}
			// Ours start once both Java processes are connected.
			offering, taking := make(chan struct{}), make(chan struct{})
			wg.Add(4)
			// A side that fails ends the others (a take would wait for ever).
			go func() {
				defer wg.Done()
				if errs[0] = prog.Offer(ctx, srv.Addrs()[0], dir+"-both", n, "jboth", offering); errs[0] != nil {
					cancel()
				}
			}()
			go func() {
				defer wg.Done()
				if javaMore, errs[1] = prog.Take(ctx, srv.Addrs()[0], dir+"-both", n, taking); errs[1] != nil {
					cancel()
				}
			}()
			for _, ch := range []chan struct{}{offering, taking} {
				select {
				case <-ch:
				case <-ctx.Done():
					t.Fatal("the Java processes did not connect")
				}
			}
			go func() {
				defer wg.Done()
				for i := range n {
					if _, err := cs[0].Put(ctx, fmt.Appendf(nil, "gboth-%d", i)); err != nil {
						errs[2] = err
						cancel()
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				if ourMore, errs[3] = take(n); errs[3] != nil {
					cancel()
				}
			}()
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range ourGot {
				if !strings.HasPrefix(d, "java-") {
					t.Errorf("we took %q where only Java's items were", d)
				}
			}
			for _, d := range javaGot {
				if !strings.HasPrefix(d, "go-") {
					t.Errorf("Java took %q where only ours were", d)
				}
			}
			fromJava := 0
			for _, d := range ourMore {
				if strings.HasPrefix(d, "jboth-") {
					fromJava++
				}
			}
			t.Logf("alone: we took %d of Java's, Java took %d of ours; both at once: Java took %d (%d of ours), we took %d (%d of Java's)",
				len(ourGot), len(javaGot), len(javaMore), fromJava, len(ourMore), fromJava)
			javaGot = append(javaGot, javaMore...)
			ourGot = append(ourGot, ourMore...)
			count := map[string]int{}
			for _, d := range append(javaGot, ourGot...) {
				count[d]++
			}
			for _, side := range []struct {
				tag string
				n   int
			}{{"java", n / 2}, {"go", n / 2}, {"jboth", n}, {"gboth", n}} {
				for i := range side.n {
					if c := count[fmt.Sprintf("%s-%d", side.tag, i)]; c != 1 {
						t.Errorf("%s-%d arrived %d times", side.tag, i, c)
					}
				}
			}
			if len(count) != 3*n {
				t.Errorf("%d distinct items arrived, want %d", len(count), 3*n)
			}
		})
	}
}

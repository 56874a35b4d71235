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

	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/internal/peers/zkqueue"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// This queue and ZooKeeper's own DistributedQueue (Debian's
// zookeeper-recipes-queue 3.8.0, driven by the Java program
// internal/peers/zkqueue) on one directory of a real server: first each
// direction alone (Java offers n/2 and we take them; we put n/2 and Java
// takes them), then both at once on another directory (the Java side
// offers n and takes n while ours puts n and takes n). Every item arrives
// exactly once across both sides. Run in each of our modes (at-least-once
// items are acknowledged).
func TestDistributedQueueInterop(t *testing.T) {
	zkserver.Require(t)
	prog, err := zkqueue.Build(peers.DefaultCacheDir())
	if errors.Is(err, zkqueue.ErrUnavailable) && os.Getenv("ZK_REQUIRED") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := zkserver.Standalone(t, realOpts)
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
			if err := put(0, n/2); err != nil {
				t.Fatal(err)
			}
			javaGot, err := prog.Take(ctx, srv.Addrs()[0], dir, n/2, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Then both at once, each side putting and taking.
			var (
				wg                sync.WaitGroup
				javaMore, ourMore []string
				errs              [4]error
			)
			wg.Add(4)
			go func() { defer wg.Done(); errs[0] = prog.Offer(ctx, srv.Addrs()[0], dir+"-both", n, "jboth", nil) }()
			go func() { defer wg.Done(); javaMore, errs[1] = prog.Take(ctx, srv.Addrs()[0], dir+"-both", n, nil) }()
			both, _ := clients(t, ctx, srv.Addrs(), dir+"-both", 2, queue.WithMode(mode))
			cs = both
			go func() {
				defer wg.Done()
				for i := range n {
					if _, err := cs[0].Put(ctx, fmt.Appendf(nil, "gboth-%d", i)); err != nil {
						errs[2] = err
						return
					}
				}
			}()
			go func() { defer wg.Done(); ourMore, errs[3] = take(n) }()
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

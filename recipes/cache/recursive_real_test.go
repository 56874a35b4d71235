package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/netproxy"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// A TreeCache on one recursive watch (WithRecursive) converges to the
// state another session writes, on a real standalone server: 300 writes
// (create, set, delete, delete-and-create) over nodes two levels deep,
// 50 of them while the reader's connection is black-holed (netproxy),
// after which it is reset and the reader reconnects to the same session:
// what changed meanwhile reaches the cache only through its walk after
// the reconnect (the server sends no event for it). With
// CACHE_CANARY_NOREREAD=1 the test runs with that walk switched off
// (bugRecursiveNoReread) and fails. Judged against the tree read on the
// writer's session.
func TestRealRecursiveTreeConverges(t *testing.T) {
	zkserver.Require(t)
	if os.Getenv("CACHE_CANARY_NOREREAD") != "" {
		defer canary.Enable(bugRecursiveNoReread)()
	}
	cl := zkserver.Standalone(t, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	px, err := netproxy.New(cl.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	reader := realtest.Dial(t, ctx, []string{px.Addr()}, realtest.Options{}).Ex
	writer := realtest.Dial(t, ctx, cl.Addrs(), realtest.Options{}).Ex
	root := fmt.Sprintf("/cache-rec-%d", time.Now().UnixNano())
	if _, err := executor.Await(ctx, writer, task.Create(root, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{}, 1)
	tc, err := NewTree(root, WithData(), WithRecursive(), WithOnSynced(func() {
		select {
		case synced <- struct{}{}:
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(ctx, reader, tc.Start()); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	paths := []string{root + "/a", root + "/b", root + "/a/x", root + "/a/y", root + "/b/x"}
	for i := range 300 {
		switch i {
		case 150: // what is written now, no event will tell the reader
			px.Silence()
		case 200:
			px.Open()
			px.ResetSilenced()
		}
		p := paths[rng.IntN(len(paths))]
		data := []byte(fmt.Sprintf("v%d", rng.IntN(3)))
		var err error
		switch rng.IntN(4) {
		case 0:
			_, err = executor.Await(ctx, writer, task.Create(p, data, task.Persistent))
		case 1:
			_, err = executor.Await(ctx, writer, task.Set(p, data, -1))
		case 2:
			_, err = executor.Await(ctx, writer, task.Delete(p, -1))
		default:
			if _, err = executor.Await(ctx, writer, task.Delete(p, -1)); err == nil {
				_, err = executor.Await(ctx, writer, task.Create(p, data, task.Persistent))
			}
		}
		if err != nil && !isExpected(err) && !errors.Is(err, task.ErrNotEmpty) &&
			!errors.Is(err, task.ErrConnectionLoss) && !errors.Is(err, task.ErrNotSent) {
			t.Fatalf("write %d on %s: %v", i, p, err)
		}
	}
	want := map[string]Node{}
	for _, p := range append([]string{root}, paths...) {
		d, err := executor.Await(ctx, writer, task.Get(p))
		if isExpected(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		want[p] = Node{Path: p, Data: d.Data, Stat: d.Stat}
	}
	for {
		got := map[string]Node{}
		for _, n := range tc.Current() {
			got[n.Path] = n
		}
		err := sameNodes(got, want, true)
		if err == nil {
			t.Logf("converged: %d nodes", len(want))
			break
		}
		select {
		case <-synced:
		case <-ctx.Done():
			t.Fatalf("not converged: %v", err)
		}
	}
	if _, err := executor.Await(ctx, reader, tc.Stop()); err != nil {
		t.Fatal(err)
	}
}

package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

var realOpts = zkserver.Options{MaxSessionTimeout: 10 * time.Second}

// A ChildrenCache (with data) and a NodeCache on one session converge to
// the state another session writes, on a real standalone server: 300
// writes (create, set, delete, delete-and-create with the same data) over
// four children and one node, with the server killed and restarted midway (both
// sessions survive it; reads in flight fail with connection loss and are
// retried). Judged against a direct read on the writer's session.
func TestRealConverges(t *testing.T) { realConverges(t, false) }

// TestRealConverges with both sessions under a chroot (realtest.Chroot).
func TestRealConvergesUnderRoot(t *testing.T) { realConverges(t, true) }

func realConverges(t *testing.T, underRoot bool) {
	zkserver.Require(t)
	cl := zkserver.Standalone(t, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chroot := realtest.Chroot(t, ctx, cl.Addrs(), underRoot)
	reader := realtest.Dial(t, ctx, cl.Addrs(), realtest.Options{Root: chroot}).Ex
	writer := realtest.Dial(t, ctx, cl.Addrs(), realtest.Options{Root: chroot}).Ex
	root := fmt.Sprintf("/cache-real-%d", time.Now().UnixNano())
	dir, node := root+"/dir", root+"/node"
	for _, p := range []string{root, dir} {
		if _, err := executor.Await(ctx, writer, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	synced := make(chan struct{}, 1)
	onSynced := func() {
		select {
		case synced <- struct{}{}:
		default:
		}
	}
	cc, _ := NewChildren(dir, WithData(), WithOnSynced(onSynced))
	nc, _ := NewNode(node, WithOnSynced(onSynced))
	if _, err := executor.Await(ctx, reader, cc.Start()); err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(ctx, reader, nc.Start()); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{dir + "/k0", dir + "/k1", dir + "/k2", dir + "/k3", node}
	for i := range 300 {
		if i == 150 {
			cl.Kill(0)
			if err := cl.Restart(ctx, 0); err != nil {
				t.Fatal(err)
			}
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
		if err != nil && !isExpected(err) && !errors.Is(err, task.ErrConnectionLoss) && !errors.Is(err, task.ErrNotSent) {
			t.Fatalf("write %d on %s: %v", i, p, err) // connection loss around the restart: applied or not, judged below
		}
	}
	// The server's state, read on the writer's session after its last write.
	want := map[string]Node{}
	for _, p := range paths {
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
		for _, n := range cc.Current() {
			got[n.Path] = n
		}
		if n, ok := nc.Current(); ok {
			got[n.Path] = n
		}
		err := sameNodes(got, want, false)
		if err == nil {
			t.Logf("converged: %d nodes", len(want))
			return
		}
		select {
		case <-synced:
		case <-ctx.Done():
			t.Fatalf("not converged: %v", err)
		}
	}
}

func isExpected(err error) bool {
	return err != nil && (errors.Is(err, task.ErrNodeExists) || errors.Is(err, task.ErrNoNode))
}

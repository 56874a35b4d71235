package cache

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// atomicCountConn is countConn for a Conn whose executor runs on its own
// goroutine.
type atomicCountConn struct {
	task.Conn
	reqs atomic.Int64
}

func (a *atomicCountConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	a.reqs.Add(1)
	a.Conn.Do(req, done, watch)
}

// BenchmarkRealTreeCache is BenchmarkTreeCache on a real standalone
// server (ZooKeeper 3.8): the same tree of 1,000 nodes and the same
// stream of changes; ns/op is the time from a change's reply to the
// writer until the cache shows it.
func BenchmarkRealTreeCache(b *testing.B) {
	zkserver.Require(b)
	srv := zkserver.Standalone(b, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	writer := realtest.Dial(b, ctx, srv.Addrs(), realtest.Options{}).Ex
	root := fmt.Sprintf("/bench-tree-%d", time.Now().UnixNano())
	mk := func(p string) task.Task[task.Unit] {
		return c.Map(task.Create(p, []byte("x"), task.Persistent), func(string) task.Unit { return task.Unit{} })
	}
	if _, err := executor.Await(ctx, writer, mk(root)); err != nil {
		b.Fatal(err)
	}
	for d := range 9 {
		dir := fmt.Sprintf("%s/d%d", root, d)
		ops := []task.Task[task.Unit]{mk(dir)}
		for k := range 110 {
			ops = append(ops, mk(fmt.Sprintf("%s/n%d", dir, k)))
		}
		if _, err := executor.Await(ctx, writer, c.Seq(ops[0], c.All(ops[1:]...))); err != nil {
			b.Fatal(err)
		}
	}
	for _, recursive := range []bool{false, true} {
		name := "watches"
		if recursive {
			name = "recursive"
		}
		b.Run(name, func(b *testing.B) {
			zc, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: srv.Addrs(), SessionTimeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			cc := &atomicCountConn{Conn: zc}
			ex, err := executor.New(executor.Config{Conn: cc})
			if err != nil {
				zc.Close()
				b.Fatal(err)
			}
			done := make(chan struct{})
			go func() { defer close(done); _ = ex.Run(context.Background()) }()
			defer func() { ex.Close(); <-done }()
			synced := make(chan struct{}, 1)
			tc, err := NewTree(root, WithData(), withRecursive(recursive), WithOnSynced(func() {
				select {
				case synced <- struct{}{}:
				default:
				}
			}))
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if _, err := executor.Await(ctx, ex, tc.Start()); err != nil {
				b.Fatal(err)
			}
			startTook := time.Since(start)
			startReqs := cc.reqs.Load()
			<-synced
			cc.reqs.Store(0)
			changes := 0
			for b.Loop() {
				leaf := fmt.Sprintf("%s/d%d/n%d", root, changes%9, changes%110)
				extra := fmt.Sprintf("%s/d%d/extra", root, changes/3%9)
				var op task.Task[task.Unit]
				var seen func(map[string]Node) bool // the change is in the cache
				switch changes % 3 {
				case 0:
					v := fmt.Sprint(changes)
					op = c.Map(task.Set(leaf, []byte(v), task.AnyVersion), func(task.Stat) task.Unit { return task.Unit{} })
					seen = func(m map[string]Node) bool { return string(m[leaf].Data) == v }
				case 1:
					op = mk(extra)
					seen = func(m map[string]Node) bool { _, ok := m[extra]; return ok }
				default:
					op = task.Delete(extra, task.AnyVersion)
					seen = func(m map[string]Node) bool { _, ok := m[extra]; return !ok }
				}
				if _, err := executor.Await(ctx, writer, op); err != nil {
					b.Fatal(err)
				}
				for !seen(tc.e.snapshot()) {
					select {
					case <-synced:
					case <-ctx.Done():
						b.Fatal("the cache did not sync")
					}
				}
				changes++
			}
			b.ReportMetric(float64(cc.reqs.Load())/float64(changes), "reqs/change")
			b.ReportMetric(float64(startReqs), "start-reqs")
			b.ReportMetric(float64(startTook.Milliseconds()), "start-ms")
			if _, err := executor.Await(ctx, ex, tc.Stop()); err != nil {
				b.Fatal(err)
			}
		})
	}
}

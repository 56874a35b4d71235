package zkadapter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// outstanding is how many operations each contender keeps in flight on its
// one session.
const outstanding = 64

// BenchmarkPipelined: one server, one session per contender, 64 getData
// (or setData) operations outstanding at all times; ns/op is per
// operation. raw is go-zookeeper with 64 goroutines; conn is this Conn
// driven by a goroutine that reissues on every done; executor is 64
// executor flows, each a loop of task.Get (task.Set) over this Conn.
func BenchmarkPipelined(b *testing.B) {
	opts := serverOpts
	opts.Throughput = true
	srv := zkserver.Standalone(b, opts)
	cfg := Config{Servers: srv.Addrs(), SessionTimeout: 10 * time.Second}
	setup, err := Dial(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan task.Response, 1)
	setup.Start(func(task.Event) {})
	setup.Do(&task.CreateRequest{Path: "/bench", Data: make([]byte, 64), Mode: task.Persistent, ACL: task.OpenACL},
		func(r task.Response) { done <- r }, nil)
	if r := <-done; r.Err != nil {
		b.Fatal(r.Err)
	}
	// Warm the server's JIT up before measuring anything.
	for range 40 {
		for range outstanding * 50 {
			setup.Do(&task.GetDataRequest{Path: "/bench"}, func(task.Response) {}, nil)
		}
		setup.Do(&task.SyncRequest{Path: "/bench"}, func(r task.Response) { done <- r }, nil)
		<-done
	}
	setup.Close()

	// Contenders alternate, so that drifts of the server (JIT, GC, the
	// machine's other load) spread over all of them.
	for _, op := range []string{"get", "set"} {
		for range 3 {
			b.Run(op+"/raw", func(b *testing.B) { benchRaw(b, cfg, op) })
			b.Run(op+"/conn", func(b *testing.B) { benchConn(b, cfg, op) })
			b.Run(op+"/executor", func(b *testing.B) { benchExecutor(b, cfg, op) })
		}
	}
}

func benchRequest(op string) task.Request {
	if op == "get" {
		return &task.GetDataRequest{Path: "/bench"}
	}
	return &task.SetDataRequest{Path: "/bench", Data: make([]byte, 64), Version: task.AnyVersion}
}

func benchRaw(b *testing.B, cfg Config, op string) {
	zc, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	defer zc.Close()
	data := make([]byte, 64)
	var left atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	left.Store(int64(b.N))
	b.ResetTimer()
	for range outstanding {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				var err error
				if op == "get" {
					_, _, err = zc.Get("/bench")
				} else {
					_, err = zc.Set("/bench", data, -1)
				}
				if err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

func benchConn(b *testing.B, cfg Config, op string) {
	c, err := Dial(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.Start(func(task.Event) {})
	req := benchRequest(op)
	results := make(chan error, outstanding)
	doneFn := func(r task.Response) { results <- r.Err }
	b.ResetTimer()
	issued := 0
	for ; issued < outstanding && issued < b.N; issued++ {
		c.Do(req, doneFn, nil)
	}
	for completed := 0; completed < b.N; completed++ {
		if err := <-results; err != nil {
			b.Fatal(err)
		}
		if issued < b.N {
			issued++
			c.Do(req, doneFn, nil)
		}
	}
	b.StopTimer()
}

// runExecutor dials a Conn and runs an executor over it until stop.
func runExecutor(b *testing.B, cfg Config) (ex *executor.Executor, ctx context.Context, stop func()) {
	c, err := Dial(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	ex, err = executor.New(executor.Config{Conn: c})
	if err != nil {
		c.Close()
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- ex.Run(ctx) }()
	return ex, ctx, func() {
		ex.Close()
		<-ran
		cancel()
		c.Close()
	}
}

func benchExecutor(b *testing.B, cfg Config, op string) {
	ex, _, stop := runExecutor(b, cfg)
	defer stop()
	var one task.Task[task.Unit]
	if op == "get" {
		one = combinators.Map(task.Get("/bench"), func(task.Data) task.Unit { return task.Unit{} })
	} else {
		one = combinators.Map(task.Set("/bench", make([]byte, 64), task.AnyVersion), func(task.Stat) task.Unit { return task.Unit{} })
	}
	// Each of the 64 workers is a flow that runs one op and resubmits
	// itself from its continuation (on the executor goroutine) while ops
	// are left.
	var left atomic.Int64
	left.Store(int64(b.N))
	finished := make(chan error, outstanding)
	var worker func(task.Unit, error)
	worker = func(_ task.Unit, err error) {
		if err != nil {
			finished <- err
			return
		}
		if left.Add(-1) < 0 {
			finished <- nil
			return
		}
		executor.Submit(ex, one, worker)
	}
	b.ResetTimer()
	for range outstanding {
		worker(task.Unit{}, nil)
	}
	for range outstanding {
		if err := <-finished; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}

// BenchmarkSerial: one session, one operation at a time (each waits for
// the last one's reply): the latency a single client sees, where the
// goroutine hand-offs between the caller and the wire count in full.
// ns/op is per operation. get is getData; write is an
// ephemeral-sequential create then its delete (two operations).
func BenchmarkSerial(b *testing.B) {
	srv := zkserver.Standalone(b, serverOpts)
	cfg := Config{Servers: srv.Addrs(), SessionTimeout: 10 * time.Second}
	setup, err := Dial(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan task.Response, 1)
	setup.Start(func(task.Event) {})
	for _, p := range []string{"/serial", "/serial/w"} {
		setup.Do(&task.CreateRequest{Path: p, Data: make([]byte, 64), Mode: task.Persistent, ACL: task.OpenACL},
			func(r task.Response) { done <- r }, nil)
		if r := <-done; r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	for range 20000 {
		setup.Do(&task.GetDataRequest{Path: "/serial"}, func(r task.Response) { done <- r }, nil)
		<-done
	}
	setup.Close()
	for _, op := range []string{"get", "write"} {
		for range 2 {
			b.Run(op+"/raw", func(b *testing.B) { serialRaw(b, cfg, op) })
			b.Run(op+"/executor", func(b *testing.B) { serialExecutor(b, cfg, op) })
		}
	}
}

func serialRaw(b *testing.B, cfg Config, op string) {
	zc, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	defer zc.Close()
	acl := zk.WorldACL(zk.PermAll)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if op == "get" {
			_, _, err = zc.Get("/serial")
		} else {
			var p string
			if p, err = zc.Create("/serial/w/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err == nil {
				err = zc.Delete(p, -1)
			}
			i++
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func serialExecutor(b *testing.B, cfg Config, op string) {
	ex, ctx, stop := runExecutor(b, cfg)
	defer stop()
	var one task.Task[task.Unit]
	if op == "get" {
		one = combinators.Map(task.Get("/serial"), func(task.Data) task.Unit { return task.Unit{} })
	} else {
		one = func(s *task.Scope, k task.Cont[task.Unit]) {
			task.Run(s, task.Create("/serial/w/n-", nil, task.EphemeralSequential), func(p string, err error) {
				if err != nil {
					k(task.Unit{}, err)
					return
				}
				task.Run(s, task.Delete(p, task.AnyVersion), k)
			})
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := executor.Await(ctx, ex, one); err != nil {
			b.Fatal(err)
		}
		if op == "write" {
			i++
		}
	}
}

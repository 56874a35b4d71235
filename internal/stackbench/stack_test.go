package stackbench_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// server starts the benchmarks' server, tuned for throughput (no fsync),
// and warms it up: 8 sessions create, read, write and delete nodes for
// 20,000 rounds in all, so that no benchmark meets the server's JVM before
// its JIT has compiled the request path.
func server(b *testing.B) *zkserver.Cluster {
	zkserver.Require(b)
	srv := zkserver.Standalone(b, zkserver.Options{Throughput: true, Extra: []string{"forceSync=no"}})
	const sessions, rounds = 8, 20000
	var wg sync.WaitGroup
	errs := make([]error, sessions)
	for i := range sessions {
		zc := dialRaw(b, srv.Addrs())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds / sessions {
				p, err := zc.Create("/warm-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
				if err == nil {
					_, _, err = zc.Get(p)
				}
				if err == nil {
					_, err = zc.Set(p, []byte("x"), -1)
				}
				if err == nil {
					_, _, err = zc.Children("/")
				}
				if err == nil {
					err = zc.Delete(p, -1)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	return srv
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs work, which must do b.N operations, after resetting the
// timer, and reports the process's CPU time per operation besides what
// -benchmem reports; ops/s is the rate over all clients.
func measure(b *testing.B, work func()) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	work()
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// share runs b.N operations over clients goroutines, op(i) being one
// operation of client i, and fails b with the first error.
func share(b *testing.B, clients int, op func(i int) error) {
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		n := b.N / clients
		if i < b.N%clients {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := op(i); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
}

// counting counts the requests an executor sends.
type counting struct {
	*zkadapter.Conn
	n atomic.Int64
}

func (c *counting) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.n.Add(1)
	c.Conn.Do(req, done, watch)
}

// client is one session of ours: a zkadapter.Conn under an executor.
type client struct {
	ex   *executor.Executor
	conn *counting
	done chan struct{}
}

func dialOurs(b *testing.B, addrs []string) *client {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	zc, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: addrs, SessionTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	cc := &counting{Conn: zc}
	ex, err := executor.New(executor.Config{Conn: cc})
	if err != nil {
		zc.Close()
		b.Fatal(err)
	}
	c := &client{ex: ex, conn: cc, done: make(chan struct{})}
	go func() { defer close(c.done); _ = ex.Run(context.Background()) }()
	b.Cleanup(func() { ex.Close(); <-c.done })
	return c
}

func dialRaw(b *testing.B, addrs []string) *zk.Conn {
	b.Helper()
	zc, _, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(zc.Close)
	// Wait for the session, so that no dial is measured.
	for zc.State() != zk.StateHasSession {
		if _, _, err := zc.Exists("/"); err == nil {
			break
		}
	}
	return zc
}

// requests reports the requests ours sent per operation.
func requests(b *testing.B, cs []*client, before int64) {
	var n int64
	for _, c := range cs {
		n += c.conn.n.Load()
	}
	b.ReportMetric(float64(n-before)/float64(b.N), "reqs/op")
}

func sent(cs []*client) int64 {
	var n int64
	for _, c := range cs {
		n += c.conn.n.Load()
	}
	return n
}

// BenchmarkLock: one lock acquire+release, clients contending on one lock
// directory, each on a session of its own: go-zookeeper's zk.Lock (raw)
// and this library's lock.Client (ours).
func BenchmarkLock(b *testing.B) {
	srv := server(b)
	for _, clients := range []int{1, 4, 16, 64} {
		for round := range 2 {
			b.Run(fmt.Sprintf("raw/clients=%d", clients), func(b *testing.B) {
				ls := make([]*zk.Lock, clients)
				for i := range ls {
					ls[i] = zk.NewLock(dialRaw(b, srv.Addrs()), fmt.Sprintf("/lock-raw-%d-%d", clients, round), zk.WorldACL(zk.PermAll))
				}
				measure(b, func() {
					share(b, clients, func(i int) error {
						if err := ls[i].Lock(); err != nil {
							return err
						}
						return ls[i].Unlock()
					})
				})
			})
			b.Run(fmt.Sprintf("ours/clients=%d", clients), func(b *testing.B) {
				ctx := context.Background()
				cs := make([]*client, clients)
				ms := make([]*lock.Client, clients)
				for i := range ms {
					cs[i] = dialOurs(b, srv.Addrs())
					m, err := lock.NewClient(cs[i].ex, fmt.Sprintf("/lock-ours-%d-%d", clients, round))
					if err != nil {
						b.Fatal(err)
					}
					ms[i] = m
				}
				before := sent(cs)
				measure(b, func() {
					share(b, clients, func(i int) error {
						h, err := ms[i].Acquire(ctx)
						if err != nil {
							return err
						}
						return ms[i].Release(ctx, h)
					})
				})
				requests(b, cs, before)
			})
		}
	}
}

// BenchmarkCAS: one ID by compare-and-set on one node, clients on sessions
// of their own: get and set-with-version by hand, retried at once on a bad
// version (raw), and seqid.Next (ours).
func BenchmarkCAS(b *testing.B) {
	srv := server(b)
	for _, clients := range []int{1, 4, 16, 64} {
		for round := range 2 {
			b.Run(fmt.Sprintf("raw/clients=%d", clients), func(b *testing.B) {
				path := fmt.Sprintf("/cas-raw-%d-%d", clients, round)
				zs := make([]*zk.Conn, clients)
				for i := range zs {
					zs[i] = dialRaw(b, srv.Addrs())
				}
				if _, err := zs[0].Create(path, make([]byte, 8), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					b.Fatal(err)
				}
				measure(b, func() {
					share(b, clients, func(i int) error {
						for {
							data, st, err := zs[i].Get(path)
							if err != nil {
								return err
							}
							next := make([]byte, 8)
							binary.BigEndian.PutUint64(next, binary.BigEndian.Uint64(data)+1)
							if _, err := zs[i].Set(path, next, st.Version); err == nil {
								return nil
							} else if !errors.Is(err, zk.ErrBadVersion) {
								return err
							}
						}
					})
				})
			})
			b.Run(fmt.Sprintf("ours/clients=%d", clients), func(b *testing.B) {
				ctx := context.Background()
				path := fmt.Sprintf("/cas-ours-%d-%d", clients, round)
				cs := make([]*client, clients)
				for i := range cs {
					cs[i] = dialOurs(b, srv.Addrs())
				}
				next := seqid.Next(path)
				before := sent(cs)
				measure(b, func() {
					share(b, clients, func(i int) error {
						_, err := executor.Await(ctx, cs[i].ex, next)
						return err
					})
				})
				requests(b, cs, before)
			})
		}
	}
}

// BenchmarkRead: pipelined reads, 64 outstanding on one session: 64
// goroutines calling Get (raw) and 64 executor flows each looping over
// task.Get, started by one Await (ours). ns/op is per read.
func BenchmarkRead(b *testing.B) {
	srv := server(b)
	const outstanding = 64
	setup := dialRaw(b, srv.Addrs())
	if _, err := setup.Create("/read", make([]byte, 64), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		b.Fatal(err)
	}
	for range 2 {
		b.Run("raw", func(b *testing.B) {
			zc := dialRaw(b, srv.Addrs())
			measure(b, func() {
				share(b, outstanding, func(int) error {
					_, _, err := zc.Get("/read")
					return err
				})
			})
		})
		b.Run("ours", func(b *testing.B) {
			c := dialOurs(b, srv.Addrs())
			flows := make([]task.Task[task.Unit], outstanding)
			for i := range flows {
				n := b.N / outstanding
				if i < b.N%outstanding {
					n++
				}
				flows[i] = readLoop(n)
			}
			before := sent([]*client{c})
			measure(b, func() {
				if _, err := executor.Await(context.Background(), c.ex, allOf(flows)); err != nil {
					b.Fatal(err)
				}
			})
			requests(b, []*client{c}, before)
		})
	}
}

// readLoop reads /read n times, one after the other.
func readLoop(n int) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		left := n
		var step func()
		get := task.Get("/read")
		step = func() {
			if left == 0 {
				k(task.Unit{}, nil)
				return
			}
			left--
			get(s, func(_ task.Data, err error) {
				if err != nil {
					k(task.Unit{}, err)
					return
				}
				step()
			})
		}
		step()
	}
}

// allOf runs the flows at once and ends when all have.
func allOf(flows []task.Task[task.Unit]) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		left := len(flows)
		var first error
		for _, f := range flows {
			f(s, func(_ task.Unit, err error) {
				if err != nil && first == nil {
					first = err
				}
				if left--; left == 0 {
					k(task.Unit{}, first)
				}
			})
		}
	}
}

// BenchmarkConfigDelivery: one configuration change delivered: a writer
// (raw go-zookeeper, the same for both) sets the node, and the reader
// learns the new value: a GetW loop (raw) or config.Watch (ours). The
// writer waits for each delivery before the next write.
func BenchmarkConfigDelivery(b *testing.B) {
	srv := server(b)
	writer := dialRaw(b, srv.Addrs())
	for round := range 2 {
		b.Run("raw", func(b *testing.B) {
			path := fmt.Sprintf("/config-raw-%d", round)
			create(b, writer, path)
			zc := dialRaw(b, srv.Addrs())
			seen := make(chan uint64, 1)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					data, _, ev, err := zc.GetW(path)
					if err != nil {
						return
					}
					select {
					case seen <- binary.BigEndian.Uint64(data):
					case <-stop:
						return
					}
					select {
					case <-ev:
					case <-stop:
						return
					}
				}
			}()
			<-seen
			measure(b, func() { writeAndWait(b, writer, path, seen) })
			close(stop)
			wg.Wait()
		})
		b.Run("ours", func(b *testing.B) {
			path := fmt.Sprintf("/config-ours-%d", round)
			create(b, writer, path)
			c := dialOurs(b, srv.Addrs())
			// The handler runs on the executor goroutine and must not
			// block: a delivery per write at most, and the writer waits
			// for each.
			seen := make(chan uint64, 16)
			ctx := context.Background()
			w, err := executor.Await(ctx, c.ex, config.Watch(path, func(s config.Snapshot) {
				seen <- binary.BigEndian.Uint64(s.Data)
			}))
			if err != nil {
				b.Fatal(err)
			}
			<-seen
			before := sent([]*client{c})
			measure(b, func() { writeAndWait(b, writer, path, seen) })
			requests(b, []*client{c}, before)
			if _, err := executor.Await(ctx, c.ex, w.Stop()); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func create(b *testing.B, zc *zk.Conn, path string) {
	if _, err := zc.Create(path, make([]byte, 8), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		b.Fatal(err)
	}
}

// writeAndWait writes 1..b.N to path and waits for each to be seen.
func writeAndWait(b *testing.B, zc *zk.Conn, path string, seen <-chan uint64) {
	buf := make([]byte, 8)
	for i := 1; i <= b.N; i++ {
		binary.BigEndian.PutUint64(buf, uint64(i))
		if _, err := zc.Set(path, buf, -1); err != nil {
			b.Fatal(err)
		}
		for v := <-seen; v != uint64(i); v = <-seen {
		}
	}
}

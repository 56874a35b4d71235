package masterworker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// realOpts: sessions may last up to 10s, so a re-election after a killed
// ensemble member does not expire them (expiry is handled anyway).
var realOpts = zkserver.Options{MaxSessionTimeout: 10 * time.Second}

// realSystem is masters, workers and clients on a real server or
// ensemble, each on a session of its own.
type realSystem struct {
	t         testing.TB
	sys       *masterworker.System
	masters   []*masterworker.Master
	mstop     []func()
	workers   []*masterworker.Worker
	wstop     []func()
	clients   []*masterworker.Client
	runs      sync.WaitGroup
	cancel    context.CancelFunc
	executed  atomic.Int64
	stuck     chan struct{} // closed when worker 0's stuck handler starts
	stuckOnce sync.Once
}

func startReal(t testing.TB, ctx context.Context, addrs []string, chroot string, masters, workers, clients int, stuck bool) *realSystem {
	t.Helper()
	sys, err := masterworker.New(fmt.Sprintf("/mw-real-%016x", rand.Uint64()))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	rs := &realSystem{t: t, sys: sys, cancel: cancel}
	if stuck {
		rs.stuck = make(chan struct{})
	}
	t.Cleanup(rs.stop)
	for i := range masters {
		rc := realtest.Dial(t, ctx, addrs, realtest.Options{Root: chroot})
		ex, stop := rc.Ex, rc.Stop
		m, err := sys.Master(fmt.Sprintf("m%d", i))
		if err != nil {
			t.Fatal(err)
		}
		rs.masters, rs.mstop = append(rs.masters, m), append(rs.mstop, stop)
		rs.serve(rctx, func(ctx context.Context) error { return m.Serve(ctx, ex) })
	}
	handler := func(j masterworker.Job) task.Task[[]byte] {
		rs.executed.Add(1)
		return task.Value(j.Data)
	}
	// With stuck set, worker 0's handler never returns (until its
	// executor closes) and closes stuck when it starts: that worker holds
	// its assignments until it crashes.
	stuckHandler := func(j masterworker.Job) task.Task[[]byte] {
		return func(s *task.Scope, k task.Cont[[]byte]) {
			rs.stuckOnce.Do(func() { close(rs.stuck) })
			task.Suspend(s, k, func(task.Cont[[]byte]) func() { return nil })
		}
	}
	for i := range workers {
		rc := realtest.Dial(t, ctx, addrs, realtest.Options{Root: chroot})
		ex, stop := rc.Ex, rc.Stop
		h := handler
		if i == 0 && rs.stuck != nil {
			h = stuckHandler
		}
		w, err := sys.Worker(fmt.Sprintf("w%d", i), h)
		if err != nil {
			t.Fatal(err)
		}
		rs.workers, rs.wstop = append(rs.workers, w), append(rs.wstop, stop)
		rs.serve(rctx, func(ctx context.Context) error { return w.Serve(ctx, ex) })
	}
	for i := range clients {
		ex := realtest.Dial(t, ctx, addrs, realtest.Options{Root: chroot}).Ex
		cl, err := sys.NewClient(ex, fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		rs.clients = append(rs.clients, cl)
	}
	return rs
}

// serve runs a master's or worker's Serve until the test ends; it ends
// with the context, or with ErrClosed when its executor is stopped.
func (rs *realSystem) serve(ctx context.Context, f func(context.Context) error) {
	rs.runs.Add(1)
	go func() {
		defer rs.runs.Done()
		err := f(ctx)
		if err != nil && ctx.Err() == nil && !errors.Is(err, task.ErrClosed) && !errors.Is(err, executor.ErrStopped) {
			rs.t.Errorf("serve: %v", err)
		}
	}()
}

func (rs *realSystem) stop() {
	rs.cancel()
	rs.runs.Wait()
}

func (rs *realSystem) primary() int {
	for i, m := range rs.masters {
		if m.Primary() {
			return i
		}
	}
	return -1
}

// submitAll has every client submit n tasks (data "<client>-<k>") from
// `par` goroutines each and wait for their status, checking each status
// is the data; at done/3 it calls mid once. It returns the data of every
// task answered.
func (rs *realSystem) submitAll(ctx context.Context, n, par int, mid func()) map[string]bool {
	t := rs.t
	var (
		mu       sync.Mutex
		answered = map[string]bool{}
		wg       sync.WaitGroup
		once     sync.Once
		count    atomic.Int64
	)
	total := int64(n * len(rs.clients))
	for ci, cl := range rs.clients {
		for g := range par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := g; k < n; k += par {
					data := fmt.Sprintf("c%d-%d", ci, k)
					res, err := cl.Do(ctx, []byte(data))
					if err != nil {
						t.Errorf("do %s: %v", data, err)
						return
					}
					if res.Failed || string(res.Data) != data {
						t.Errorf("do %s: result %+v", data, res)
					}
					mu.Lock()
					if answered[data] {
						t.Errorf("%s answered twice", data)
					}
					answered[data] = true
					mu.Unlock()
					if count.Add(1) == total/3 && mid != nil {
						once.Do(mid)
					}
				}
			}()
		}
	}
	wg.Wait()
	return answered
}

// judge checks the tree once every submission was answered: nothing left
// in /tasks or in any assignment directory, and exactly one status per
// submission (counted by the data the workers wrote).
func (rs *realSystem) judge(ctx context.Context, ex *executor.Executor, answered map[string]bool) {
	t := rs.t
	t.Helper()
	tasks, err := executor.Await(ctx, ex, task.Children(rs.sys.TasksPath()))
	if err != nil || len(tasks.Names) != 0 {
		t.Errorf("/tasks: %v %v", tasks.Names, err)
	}
	dirs, err := executor.Await(ctx, ex, task.Children(rs.sys.AssignRoot()))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs.Names {
		l, err := executor.Await(ctx, ex, task.Children(rs.sys.AssignPath(d)))
		if err != nil && !errors.Is(err, task.ErrNoNode) {
			t.Fatal(err)
		}
		if len(l.Names) != 0 {
			t.Errorf("left assigned to %s: %v", d, l.Names)
		}
	}
	st, err := executor.Await(ctx, ex, task.Children(rs.sys.StatusRoot()))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, name := range st.Names {
		r, err := executor.Await(ctx, ex, rs.sys.Status(name))
		if err != nil || !r.OK {
			t.Fatalf("status %s: %v %v", name, r, err)
		}
		seen[string(r.Data)]++
	}
	for data := range answered {
		if seen[data] != 1 {
			t.Errorf("%s has %d statuses", data, seen[data])
		}
	}
	if len(seen) != len(answered) || len(st.Names) != len(answered) {
		t.Errorf("%d statuses for %d distinct data, %d submissions answered", len(st.Names), len(seen), len(answered))
	}
}

// The safety test on a real standalone server: two masters, three workers
// and two clients (sessions of their own) run 2 x 60 tasks. Worker w0's
// handler never returns: once it has started on a task, w0 crashes (its
// session is closed) with its assignments in hand, and so does the
// primary master. The backup takes over and moves w0's tasks back; the
// other workers do them. Every task is answered once, with its own data,
// and nothing is left queued or assigned.
func TestRealStandalone(t *testing.T) { realStandalone(t, false) }

// TestRealStandalone with every session under a chroot (realtest.Chroot).
func TestRealStandaloneUnderRoot(t *testing.T) { realStandalone(t, true) }

func realStandalone(t *testing.T, underRoot bool) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	chroot := realtest.Chroot(t, ctx, srv.Addrs(), underRoot)
	rs := startReal(t, ctx, srv.Addrs(), chroot, 2, 3, 2, true)
	var crashed []string
	crashDone := make(chan struct{})
	go func() {
		defer close(crashDone)
		select {
		case <-rs.stuck:
		case <-ctx.Done():
			return
		}
		if p := rs.primary(); p >= 0 {
			rs.mstop[p]()
			crashed = append(crashed, "master "+rs.masters[p].ID())
		}
		rs.wstop[0]()
		crashed = append(crashed, "worker "+rs.workers[0].ID())
	}()
	answered := rs.submitAll(ctx, 60, 4, nil)
	<-crashDone
	ex := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{Root: chroot}).Ex
	rs.judge(ctx, ex, answered)
	var terms, moved int64
	for _, m := range rs.masters {
		n, _, mv := m.Stats()
		terms, moved = terms+n, moved+mv
	}
	t.Logf("%d tasks answered, %d handler runs on the live workers, crashed: %v, terms as primary: %d, tasks moved back: %d",
		len(answered), rs.executed.Load(), crashed, terms, moved)
	if len(crashed) != 2 || terms < 2 || moved == 0 {
		t.Fatalf("the crashes did not happen as planned: %v, %d terms, %d tasks moved back", crashed, terms, moved)
	}
}

// The same on a three-server ensemble, with the ensemble's leader killed
// (SIGKILL) a third of the way through, as well as the primary master's
// session closed: sessions move to the surviving servers, and every task
// is still answered once.
func TestRealEnsembleKill(t *testing.T) {
	zkserver.Require(t)
	ens := zkserver.Ensemble(t, 3, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	rs := startReal(t, ctx, ens.Addrs(), "", 2, 3, 2, false)
	killed := -1
	answered := rs.submitAll(ctx, 40, 4, func() {
		killed = ens.Leader(ctx)
		if killed >= 0 {
			ens.Kill(killed)
		}
		if p := rs.primary(); p >= 0 {
			rs.mstop[p]()
		}
	})
	ex := realtest.Dial(t, ctx, ens.Addrs(), realtest.Options{}).Ex
	rs.judge(ctx, ex, answered)
	t.Logf("%d tasks answered, %d handler runs, killed server %d", len(answered), rs.executed.Load(), killed)
	if killed < 0 {
		t.Fatal("no leader to kill")
	}
}

// BenchmarkRealThroughput measures tasks per second through the whole
// protocol (submit, assign, execute, status, wait) on a real standalone
// server with one master (and no backup), four workers with a handler
// that returns at once, and two clients submitting from 8 goroutines
// each. b.N is the number of tasks.
func BenchmarkRealThroughput(b *testing.B) {
	zkserver.Require(b)
	srv := zkserver.Standalone(b, zkserver.Options{MaxSessionTimeout: 10 * time.Second, Throughput: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rs := startReal(b, ctx, srv.Addrs(), "", 1, 4, 2, false)
	// Warm up: one task through, so the master leads and the workers are
	// registered before the clock starts.
	if _, err := rs.clients[0].Do(ctx, []byte("warm-up")); err != nil {
		b.Fatal(err)
	}
	const par = 8
	var wg sync.WaitGroup
	var next atomic.Int64
	b.ResetTimer()
	for ci := range rs.clients {
		for range par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(b.N) {
					if _, err := rs.clients[ci].Do(ctx, []byte("x")); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}

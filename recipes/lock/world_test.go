package lock_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// world is a deterministic fake server with n clients, each an executor on
// a session of its own, all driven from the test goroutine.
type world struct {
	t     testing.TB
	clk   *fakezk.Clock
	srv   *fakezk.Server
	conns []*fakezk.Conn
	cnts  []*counting
	exs   []*executor.Executor
	errs  []error // errors reported by detached flows (cleanups)
}

// counting is a Conn that counts the children listings a client sends.
type counting struct {
	*fakezk.Conn
	lists int
}

func (c *counting) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if _, ok := req.(*task.GetChildrenRequest); ok {
		c.lists++
	}
	c.Conn.Do(req, done, watch)
}

func newWorld(t testing.TB, seed uint64, n int, cfg fakezk.Config) *world {
	t.Helper()
	w := &world{t: t, clk: fakezk.NewClock(fakezk.Epoch)}
	cfg.Seed, cfg.Clock, cfg.Deterministic = seed, w.clk, true
	w.srv = fakezk.New(cfg)
	for i := range n {
		conn := w.srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
		cnt := &counting{Conn: conn}
		ex, err := executor.New(executor.Config{Conn: cnt, Clock: w.clk, Seed: seed*31 + uint64(i) + 1,
			OnError: func(err error) { w.errs = append(w.errs, err) }})
		if err != nil {
			t.Fatal(err)
		}
		w.conns = append(w.conns, conn)
		w.cnts = append(w.cnts, cnt)
		w.exs = append(w.exs, ex)
		t.Cleanup(ex.Shutdown)
	}
	w.drive()
	return w
}

func (w *world) step() int {
	n := 0
	for _, ex := range w.exs {
		n += ex.RunUntilIdle()
	}
	return n + w.srv.RunUntilIdle()
}

// drive runs until nothing is left to run at the current time.
func (w *world) drive() {
	for w.step() > 0 {
	}
}

// settle drives, advancing the clock to the next timer whenever idle,
// until done holds or no timer is left (false).
func (w *world) settle(done func() bool) bool {
	for range 100000 {
		w.drive()
		if done() {
			return true
		}
		if !w.clk.AdvanceToNext() {
			return false
		}
	}
	return false
}

// outcome is the result of a flow, once it has ended.
type outcome[T any] struct {
	v    T
	err  error
	done bool
}

// submit starts t on client i and returns where its outcome will be.
func submit[T any](w *world, i int, t task.Task[T]) *outcome[T] {
	o := &outcome[T]{}
	executor.Submit(w.exs[i], t, func(v T, err error) { o.v, o.err, o.done = v, err, true })
	return o
}

// run runs t on client i to its end.
func run[T any](w *world, i int, t task.Task[T]) (T, error) {
	w.t.Helper()
	o := submit(w, i, t)
	if !w.settle(func() bool { return o.done }) {
		w.t.Fatalf("task on client %d never ended", i)
	}
	return o.v, o.err
}

// children lists dir on the server, sorted.
func (w *world) children(dir string) []string {
	var out []string
	for _, p := range w.srv.Paths() {
		if strings.HasPrefix(p, dir+"/") && !strings.Contains(p[len(dir)+1:], "/") {
			out = append(out, p[len(dir)+1:])
		}
	}
	sort.Strings(out)
	return out
}

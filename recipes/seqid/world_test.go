package seqid_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// world is a deterministic fake server with n clients, each an executor on
// a session of its own, all driven from the test goroutine.
type world struct {
	t     testing.TB
	clk   *fakezk.Clock
	srv   *fakezk.Server
	conns []*fakezk.Conn
	exs   []*executor.Executor
}

func newWorld(t testing.TB, seed uint64, n int, cfg fakezk.Config) *world {
	t.Helper()
	w := &world{t: t, clk: fakezk.NewClock(fakezk.Epoch)}
	cfg.Seed, cfg.Clock, cfg.Deterministic = seed, w.clk, true
	w.srv = fakezk.New(cfg)
	for i := range n {
		conn := w.srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
		ex, err := executor.New(executor.Config{Conn: conn, Clock: w.clk, Seed: seed*31 + uint64(i) + 1})
		if err != nil {
			t.Fatal(err)
		}
		w.conns = append(w.conns, conn)
		w.exs = append(w.exs, ex)
		t.Cleanup(ex.Shutdown)
	}
	w.drive()
	return w
}

// step runs every executor and the server until each is idle once, and
// says how much ran.
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
	for {
		w.drive()
		if done() {
			return true
		}
		if !w.clk.AdvanceToNext() {
			return false
		}
	}
}

// run runs t on client i to its end.
func run[T any](w *world, i int, t task.Task[T]) (T, error) {
	w.t.Helper()
	var (
		v    T
		err  error
		done bool
	)
	executor.Submit(w.exs[i], t, func(x T, e error) { v, err, done = x, e, true })
	if !w.settle(func() bool { return done }) {
		w.t.Fatalf("task on client %d never ended", i)
	}
	return v, err
}

// value reads the sequence at path through client 0.
func (w *world) value(path string) int64 {
	w.t.Helper()
	d, err := run(w, 0, task.Get(path))
	if err != nil {
		w.t.Fatalf("get %s: %v", path, err)
	}
	v, err := seqid.Decode(d.Data)
	if err != nil {
		w.t.Fatalf("decode %s: %v", path, err)
	}
	return v
}

// create makes path hold data.
func (w *world) create(path string, data []byte) {
	w.t.Helper()
	if _, err := run(w, 0, task.Create(path, data, task.Persistent)); err != nil {
		w.t.Fatalf("create %s: %v", path, err)
	}
}

// ids checks that no ID was drawn twice, reporting who drew it.
type ids struct {
	t    testing.TB
	who  map[int64]int
	max  int64
	seed uint64
}

func newIDs(t testing.TB, seed uint64) *ids { return &ids{t: t, who: map[int64]int{}, seed: seed} }

func (s *ids) add(client int, id int64) {
	if prev, ok := s.who[id]; ok {
		s.t.Errorf("seed %d: id %d handed out twice (clients %d and %d)", s.seed, id, prev, client)
	}
	s.who[id] = client
	s.max = max(s.max, id)
}

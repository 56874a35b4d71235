package idpersist_test

import (
	"errors"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// world is the simulation world (fakezk/sim) with what the tests judge:
// a deterministic fake server with n clients, each an executor on a
// session of its own, all driven from the test goroutine, and the IDs
// drawn, the replicas and the durable store.
type world struct {
	*sim.World
	t     testing.TB
	seed  uint64
	cfg   idpersist.Config
	store *idpersist.FileStore
	reps  map[int]*idpersist.Replica
	ids   map[int64]int // id -> client that drew it
	order []int64
	max   int64
}

func newWorld(t *testing.T, seed uint64, n int, fc fakezk.Config) *world {
	t.Helper()
	sw, err := sim.New(sim.Config{Seed: seed, Clients: n, Server: fc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	w := &world{World: sw, t: t, seed: seed, reps: map[int]*idpersist.Replica{}, ids: map[int64]int{}}
	w.store = newFileStore(t)
	w.cfg = idpersist.Config{Sequence: "/ids/seq", Limit: "/ids/limit", Election: "/ids/election",
		Store: w.store, Chunk: 10, LowWater: 3}
	return w
}

// allOf reports whether every func reports true.
func allOf(fs ...func() bool) func() bool {
	return func() bool {
		for _, f := range fs {
			if !f() {
				return false
			}
		}
		return true
	}
}

// settle drives, advancing the clock whenever idle, until done holds.
func (w *world) settle(done func() bool) {
	w.t.Helper()
	if !w.Settle(done) {
		w.t.Fatalf("seed %d: stuck", w.seed)
	}
}

// replica starts a persister replica on client i that runs for election
// again after each session expiry or lost leadership, until the test ends.
func (w *world) replica(i int) *idpersist.Replica {
	r, err := idpersist.NewReplica(w.cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	w.reps[i] = r
	var start func()
	start = func() {
		executor.Submit(w.Execs[i], r.Run(), func(_ task.Unit, err error) {
			switch {
			case errors.Is(err, task.ErrSessionExpired), errors.Is(err, idpersist.ErrDeposed):
				start()
			case errors.Is(err, task.ErrClosed):
			default:
				w.t.Errorf("seed %d: replica %d: %v", w.seed, i, err)
			}
		})
	}
	start()
	return r
}

// record checks an ID drawn by client i: never seen before, and at or
// below the durable mark at the moment it is handed out.
func (w *world) record(i int, id int64) {
	w.t.Helper()
	if prev, ok := w.ids[id]; ok {
		w.t.Errorf("seed %d: id %d handed out twice (clients %d and %d)", w.seed, id, prev, i)
	}
	mark, err := w.store.Load()
	if err != nil {
		w.t.Fatalf("seed %d: %v", w.seed, err)
	}
	if id > mark {
		w.t.Errorf("seed %d: id %d handed out above the durable mark %d", w.seed, id, mark)
	}
	w.ids[id] = i
	w.order = append(w.order, id)
	w.max = max(w.max, id)
}

// draw has client i draw n IDs one after another (a flow ended by session
// expiry starts again) and returns a func that reports whether it is done.
func (w *world) draw(i, n int) func() bool {
	left := n
	var next func()
	next = func() {
		if left == 0 {
			return
		}
		executor.Submit(w.Execs[i], idpersist.Next(w.cfg), func(id int64, err error) {
			switch {
			case err == nil:
				w.record(i, id)
				left--
			case errors.Is(err, task.ErrSessionExpired):
			case errors.Is(err, task.ErrClosed):
				return
			default:
				w.t.Errorf("seed %d: client %d: %v", w.seed, i, err)
				return
			}
			next()
		})
	}
	next()
	return func() bool { return left == 0 }
}

// node reads a node's value through client i (-1: missing), retrying
// connection loss and session expiry.
func (w *world) node(i int, path string) int64 {
	w.t.Helper()
	for range 100 {
		var (
			d    task.Data
			err  error
			done bool
		)
		executor.Submit(w.Execs[i], c.Retry(task.Get(path), c.Policy{}), func(x task.Data, e error) { d, err, done = x, e, true })
		w.settle(func() bool { return done })
		switch {
		case errors.Is(err, task.ErrSessionExpired):
			continue
		case errors.Is(err, task.ErrNoNode):
			return -1
		case err != nil:
			w.t.Fatalf("seed %d: get %s: %v", w.seed, path, err)
		}
		v, err := seqid.Decode(d.Data)
		if err != nil {
			w.t.Fatalf("%s: %v", path, err)
		}
		return v
	}
	w.t.Fatalf("seed %d: could not read %s", w.seed, path)
	return 0
}

// checkMark: the durable mark is at or above the limit node and every ID.
func (w *world) checkMark() {
	w.t.Helper()
	mark, err := w.store.Load()
	if err != nil {
		w.t.Fatal(err)
	}
	if l := w.node(len(w.Execs)-1, w.cfg.Limit); l > mark {
		w.t.Errorf("seed %d: limit %d above the durable mark %d", w.seed, l, mark)
	}
	if w.max > mark {
		w.t.Errorf("seed %d: id %d above the durable mark %d", w.seed, w.max, mark)
	}
}

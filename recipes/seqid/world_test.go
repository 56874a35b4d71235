package seqid_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// world is the simulation world (fakezk/sim) with the test it reports
// to: a deterministic fake server with n clients, each an executor on a
// session of its own, all driven from the test goroutine.
type world struct {
	*sim.World
	t testing.TB
}

func newWorld(t testing.TB, seed uint64, n int, cfg fakezk.Config) *world {
	t.Helper()
	sw, err := sim.New(sim.Config{Seed: seed, Clients: n, Server: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	return &world{World: sw, t: t}
}

// run runs t on client i to its end.
func run[T any](w *world, i int, t task.Task[T]) (T, error) {
	w.t.Helper()
	v, err := sim.Run(w.World, i, t)
	if errors.Is(err, sim.ErrStuck) {
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

package idpersist_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/idpersist"
)

// Under faults drawn from the seed (connection drops applied and not,
// partitions, delays, session expiries) with three replicas and two
// generators, a leader expired mid-run and a total data wipe: no ID is
// handed out twice, every ID is at or below the durable mark when it is
// handed out, every ID after the wipe is above every ID before it, and the
// mark ends at or above the limit node. The seed is in every failure.
func TestSeededFaultsAcrossWipe(t *testing.T) {
	seeds := uint64(50)
	if testing.Short() {
		seeds = 10
	}
	drops, turns := 0, int64(0)
	for seed := uint64(1); seed <= seeds; seed++ {
		d, tr := simulate(t, seed)
		if t.Failed() {
			t.Fatalf("seed %d failed (rerun with this seed)", seed)
		}
		drops += d
		turns += tr
	}
	t.Logf("%d seeds: %d connection drops, %d leader turns", seeds, drops, turns)
	if drops == 0 || turns <= int64(seeds) {
		t.Fatal("the faults never bit: the test checks nothing")
	}
}

func simulate(t *testing.T, seed uint64) (drops int, turns int64) {
	w := newWorld(t, seed, 5, fakezk.Config{
		FaultRate: 0.05, Trace: true,
		Faults: fakezk.FaultConfig{MaxPartition: 10 * time.Second, MaxDelay: time.Second},
	})
	for i := range 3 {
		w.replica(i)
	}
	w.settle(allOf(w.draw(3, 12), w.draw(4, 12)))
	if l := w.leaders(); len(l) == 1 {
		w.Server.Expire(w.Conns[l[0]])
	}
	w.settle(allOf(w.draw(3, 12), w.draw(4, 12)))
	before := w.max
	w.Server.Wipe()
	n := len(w.order)
	w.settle(allOf(w.draw(3, 12), w.draw(4, 12)))
	for _, id := range w.order[n:] {
		if id <= before {
			t.Errorf("seed %d: id %d after the wipe, at or below %d drawn before it", seed, id, before)
		}
	}
	if len(w.ids) != 72 {
		t.Errorf("seed %d: %d distinct ids, want 72", seed, len(w.ids))
	}
	w.checkMark()
	for _, line := range w.Server.Trace() {
		if strings.Contains(line, "fault drop") || strings.Contains(line, "fault partition") {
			drops++
		}
	}
	for _, r := range w.reps {
		turns += r.Turns()
	}
	return drops, turns
}

// hookStore calls after once a Store has made a value durable.
type hookStore struct {
	inner idpersist.Store
	after func(v int64)
}

func (h *hookStore) Load() (int64, error) { return h.inner.Load() }

func (h *hookStore) Store(v int64) error {
	if err := h.inner.Store(v); err != nil {
		return err
	}
	if h.after != nil {
		h.after(v)
	}
	return nil
}

// The leader dies between making a new limit durable and writing it to
// the limit node: the mark is then above the limit (harmless), the backup
// takes over from the node as it is, and no ID repeats.
func TestLeaderKilledBetweenStoreAndLimit(t *testing.T) {
	w := newWorld(t, 7, 3, fakezk.Config{})
	hs := &hookStore{inner: w.store}
	w.cfg.Store = hs
	w.replica(0)
	w.settle(allOf(w.draw(2, 15), w.oneLeaderOtherThan()))
	w.replica(1)
	w.Drive()
	killed := -1
	hs.after = func(int64) {
		if killed < 0 {
			killed = w.leaders()[0]
			w.Server.Expire(w.Conns[killed])
		}
	}
	w.settle(allOf(w.draw(2, 30), func() bool { return killed >= 0 }))
	if len(w.ids) != 45 {
		t.Fatalf("%d ids, want 45", len(w.ids))
	}
	w.checkMark()
}

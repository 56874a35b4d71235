package idpersist_test

import (
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
)

// One leader, one generator: the limit moves ahead of the sequence in
// chunks as IDs are drawn, always durable first; IDs are 1, 2, 3, ...
func TestSingleLeaderAdvancesLimit(t *testing.T) {
	w := newWorld(t, 1, 2, fakezk.Config{})
	r := w.replica(0)
	w.settle(allOf(w.draw(1, 35)))
	if !r.Leading() || r.Turns() != 1 {
		t.Fatalf("leading %v, turns %d", r.Leading(), r.Turns())
	}
	for i, id := range w.order {
		if id != int64(i+1) {
			t.Fatalf("ids %v, want 1, 2, 3, ...", w.order)
		}
	}
	w.Drive()
	w.checkMark()
	limit, seq := w.node(0, w.cfg.Limit), w.node(0, w.cfg.Sequence)
	if seq != 35 || limit < seq+w.cfg.LowWater || limit > seq+w.cfg.Chunk {
		t.Fatalf("sequence %d, limit %d: want 35 and a limit in [38, 45]", seq, limit)
	}
	if mark, _ := w.store.Load(); mark != limit {
		t.Fatalf("mark %d, limit %d: the leader stores exactly the limits it sets", mark, limit)
	}
}

// Without a leader nothing is handed out: generators wait for the nodes.
func TestNoLeaderNoIDs(t *testing.T) {
	w := newWorld(t, 2, 2, fakezk.Config{})
	done := w.draw(1, 3)
	for range 50 {
		w.Drive()
		w.Clock.AdvanceToNext()
	}
	if done() || len(w.ids) != 0 {
		t.Fatalf("ids %v drawn with no leader", w.order)
	}
	w.replica(0)
	w.settle(done)
	w.checkMark()
}

// leaders lists the replicas that lead now.
func (w *world) leaders() []int {
	var out []int
	for i := range w.Execs {
		if r := w.reps[i]; r != nil && r.Leading() {
			out = append(out, i)
		}
	}
	return out
}

// oneLeaderOtherThan waits for exactly one leader, not among old.
func (w *world) oneLeaderOtherThan(old ...int) func() bool {
	return func() bool {
		l := w.leaders()
		return len(l) == 1 && !slices.Contains(old, l[0])
	}
}

// The leader's session expires, then the next leader's connection is
// closed: each time a backup takes over, and no ID repeats.
func TestBackupTakesOver(t *testing.T) {
	w := newWorld(t, 3, 4, fakezk.Config{})
	w.replica(0)
	w.replica(1)
	w.replica(2)
	w.settle(allOf(w.draw(3, 15), w.oneLeaderOtherThan()))
	first := w.leaders()[0]
	w.Server.Expire(w.Conns[first])
	w.settle(allOf(w.draw(3, 15), w.oneLeaderOtherThan(first)))
	second := w.leaders()[0]
	w.Conns[second].Close()
	w.settle(allOf(w.draw(3, 15), w.oneLeaderOtherThan(second)))
	if len(w.ids) != 45 {
		t.Fatalf("%d ids, want 45", len(w.ids))
	}
	for i, id := range w.order[1:] {
		if id <= w.order[i] {
			t.Fatalf("ids of one generator not increasing: %v", w.order)
		}
	}
	w.checkMark()
}

// Total data loss: every server loses its data. The leader seeds the
// sequence from the durable mark before any ID is handed out, so every ID
// after the wipe is above every ID before it.
func TestWipeResumesAboveMark(t *testing.T) {
	w := newWorld(t, 4, 3, fakezk.Config{})
	w.replica(0)
	w.replica(1)
	w.settle(allOf(w.draw(2, 23)))
	before := w.max
	mark, _ := w.store.Load()
	w.Server.Wipe()
	w.settle(allOf(w.draw(2, 23)))
	for _, id := range w.order[23:] {
		if id <= before || id <= mark {
			t.Fatalf("id %d after the wipe, not above the ids before (%d) and the mark then (%d)", id, before, mark)
		}
	}
	if w.order[23] != mark+1 {
		t.Fatalf("first id after the wipe %d, want mark+1 = %d", w.order[23], mark+1)
	}
	w.checkMark()
}

package barrier_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// An operator deletes the nodes of participants waiting in Enter (the
// simulation's double-barrier seed 825: three of four participants, all
// their nodes deleted): each notices its own node is gone and fails with
// ErrParticipantLost, rather than waiting for a ready node nobody will
// make. A node the operator creates again at a participant's path is
// counted in its place: that participant waits on (entering again would
// count it twice), and fails once that node goes too. Entering again,
// the participants pass once the barrier is full.
func TestEnterNoticesOperatorDelete(t *testing.T) {
	w := newTestWorld(t, 21, 4)
	d, _ := barrier.NewDouble("/op/round", 4)
	es := make([]*sim.Outcome[*barrier.Participant], 3)
	for i := range es {
		es[i] = sim.Submit(w, i, d.Enter())
	}
	w.Drive()
	nodes := participantNodes(w, d.Dir())
	if len(nodes) != 3 {
		t.Fatalf("participant nodes %v, want 3", nodes)
	}
	for i, e := range es {
		if e.Done {
			t.Fatalf("enter %d ended with 3 of 4: %+v", i, e)
		}
	}
	// Which participant has which node: the session that owns it.
	owner := map[int64]int{}
	for i := range es {
		owner[w.Conns[i].SessionID()] = i
	}
	var copied int
	for j, n := range nodes {
		st, _ := w.Server.NodeStat(d.Dir() + "/" + n)
		if j == len(nodes)-1 {
			copied = owner[st.EphemeralOwner]
		}
		if err := w.Server.AdminDelete(d.Dir() + "/" + n); err != nil {
			t.Fatal(err)
		}
	}
	// The last one created again, as a persistent node of the operator's.
	again := d.Dir() + "/" + nodes[len(nodes)-1]
	if err := w.Server.AdminCreate(again, []byte("operator"), 0); err != nil {
		t.Fatal(err)
	}
	ended := func() bool { return es[0].Done && es[1].Done && es[2].Done }
	w.Settle(ended)
	for i, e := range es {
		switch {
		case i == copied && e.Done:
			t.Errorf("enter %d, whose node was created again, ended: %v", i, e.Err)
		case i != copied && !e.Done:
			t.Errorf("enter %d, whose node the operator deleted, still waits", i)
		case i != copied && !errors.Is(e.Err, barrier.ErrParticipantLost):
			t.Errorf("enter %d = %v, want ErrParticipantLost", i, e.Err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if err := w.Server.AdminDelete(again); err != nil {
		t.Fatal(err)
	}
	w.Settle(ended)
	if !es[copied].Done || !errors.Is(es[copied].Err, barrier.ErrParticipantLost) {
		t.Fatalf("enter %d after the operator's node went: %+v, want ErrParticipantLost", copied, es[copied])
	}
	if got := participantNodes(w, d.Dir()); len(got) != 0 {
		t.Fatalf("participant nodes after the failures: %v", got)
	}
	for i := range es {
		es[i] = sim.Submit(w, i, d.Enter())
	}
	last := sim.Submit(w, 3, d.Enter())
	w.Settle(func() bool { return last.Done && ended() })
	for i, e := range append(es, last) {
		if !e.Done || e.Err != nil {
			t.Fatalf("enter %d again: %+v", i, e)
		}
	}
}

// An operator deletes or replaces the node of a participant waiting in
// Leave. Deleted, the participant counts as left: every Leave returns. A
// node created again at its path (a persistent node here, the operator's
// own) is not the participant's: Leave does not delete it, and waits for
// it like for any participant; once the operator removes it, every Leave
// returns.
func TestLeaveWithOperator(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		w := newTestWorld(t, 22, 3)
		d, _ := barrier.NewDouble("/op/leave", 3)
		es := make([]*sim.Outcome[*barrier.Participant], 3)
		for i := range es {
			es[i] = sim.Submit(w, i, d.Enter())
		}
		w.Drive()
		for i, e := range es {
			if !e.Done || e.Err != nil {
				t.Fatalf("enter %d: %+v", i, e)
			}
		}
		// The lowest starts leaving: it keeps its node and waits.
		seq := func(p *barrier.Participant) string { s := p.Path(); return s[len(s)-10:] }
		lowest := 0
		for i, e := range es {
			if seq(e.V) < seq(es[lowest].V) {
				lowest = i
			}
		}
		ls := make([]*sim.Outcome[task.Unit], 3)
		ls[lowest] = sim.Submit(w, lowest, es[lowest].V.Leave())
		w.Drive()
		path := es[lowest].V.Path()
		if _, ok := w.Server.NodeStat(path); !ok || ls[lowest].Done {
			t.Fatalf("recreate %v: the lowest left first: %+v", recreate, ls[lowest])
		}
		if err := w.Server.AdminDelete(path); err != nil {
			t.Fatal(err)
		}
		if recreate {
			if err := w.Server.AdminCreate(path, []byte("operator"), 0); err != nil {
				t.Fatal(err)
			}
		}
		for i := range es {
			if i != lowest {
				ls[i] = sim.Submit(w, i, es[i].V.Leave())
			}
		}
		all := func() bool { return ls[0].Done && ls[1].Done && ls[2].Done }
		w.Settle(all)
		if recreate {
			if st, ok := w.Server.NodeStat(path); !ok || st.EphemeralOwner != 0 {
				t.Fatalf("a Leave deleted the operator's node at %s", path)
			}
			if all() {
				t.Fatalf("every Leave returned while the operator's node %s is up", path)
			}
			if err := w.Server.AdminDelete(path); err != nil {
				t.Fatal(err)
			}
			w.Settle(all)
		}
		for i, l := range ls {
			if !l.Done || l.Err != nil {
				t.Fatalf("recreate %v: leave %d: %+v", recreate, i, l)
			}
		}
		if got := participantNodes(w, d.Dir()); len(got) != 0 {
			t.Fatalf("recreate %v: participant nodes left: %v", recreate, got)
		}
	}
}

// The reply of a participant's create is lost (applied; the client cut
// off for a second) and meanwhile an operator deletes the node and
// creates it again at its path. The node with the attempt's prefix is
// counted already, so the participant takes it for its place rather than
// creating a second node: alone, it does not pass a barrier for two. The
// second participant makes two, and both pass.
func TestLostCreateReplacedCountsOnce(t *testing.T) {
	var w *sim.World
	w, err := sim.New(sim.Config{Seed: 23, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 {
			return &createDropper{Conn: c, w: &w, n: 1, cut: time.Second}
		}
		return c
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d, _ := barrier.NewDouble("/op/lost", 2)
	for _, p := range []string{"/op", d.Dir()} { // so that the lost create makes a node
		if _, err := sim.Run(w, 1, task.Create(p, nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	e0 := sim.Submit(w, 0, d.Enter())
	w.Drive()
	nodes := participantNodes(w, d.Dir())
	if len(nodes) != 1 || e0.Done {
		t.Fatalf("after the lost create: nodes %v, enter %+v", nodes, e0)
	}
	path := d.Dir() + "/" + nodes[0]
	if err := w.Server.AdminDelete(path); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate(path, nil, 0); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return e0.Done })
	if got := participantNodes(w, d.Dir()); e0.Done || len(got) != 1 {
		t.Fatalf("one participant: enter %+v, participant nodes %v (want only the operator's %s)", e0, got, path)
	}
	e1 := sim.Submit(w, 1, d.Enter())
	w.Settle(func() bool { return e0.Done && e1.Done })
	if !e0.Done || !e1.Done || e0.Err != nil || e1.Err != nil {
		t.Fatalf("two participants: %+v %+v", e0, e1)
	}
}

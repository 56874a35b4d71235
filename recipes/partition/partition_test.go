package partition_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

func newWorld(t *testing.T, seed uint64, clients int) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: seed, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

const stable = 500 * time.Millisecond

var items = []string{"q0", "q1", "q2", "q3", "q4", "q5", "q6"}

func newSet(t *testing.T) *partition.Partitioner {
	t.Helper()
	p, err := partition.New("/work", items, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func join(t *testing.T, w *sim.World, p *partition.Partitioner, i int) *partition.Member {
	t.Helper()
	m, err := sim.Run(w, i, p.Join(fmt.Sprintf("m%d", i), nil))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// balanced reports whether the live members hold every item between
// them, each the items KazooAssign gives it, all in state Acquired.
func balanced(ms []*partition.Member) bool {
	var ids []string
	for _, m := range ms {
		if m != nil {
			ids = append(ids, m.Identifier())
		}
	}
	slices.Sort(ids)
	for _, m := range ms {
		if m == nil {
			continue
		}
		want := partition.KazooAssign(m.Identifier(), ids, items)
		var got []string
		for _, h := range m.Held() {
			got = append(got, h.Item)
		}
		if m.State() != partition.Acquired || !slices.Equal(got, want) {
			return false
		}
	}
	return true
}

func TestBadInput(t *testing.T) {
	type args struct {
		path  string
		items []string
		opts  []partition.Option
	}
	for _, a := range []args{
		{"", items, nil},
		{"/", items, nil},
		{"/zookeeper/x", items, nil},
		{"/p", []string{"a/b"}, nil},
		{"/p", []string{""}, nil},
		{"/p", []string{".."}, nil},
	} {
		if _, err := partition.New(a.path, a.items, a.opts...); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%+v) = %v, want ErrInvalidPath", a, err)
		}
	}
	for _, a := range []args{
		{"/p", []string{"a", "a"}, nil},
		{"/p", items, []partition.Option{partition.WithStable(-1)}},
		{"/p", items, []partition.Option{partition.WithStable(time.Second), nil}},
	} {
		if _, err := partition.New(a.path, a.items, a.opts...); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v, want ErrInvalidArgument", a, err)
		}
	}
	w := newWorld(t, 1, 1)
	p := newSet(t)
	for _, id := range []string{"", "a/b", "."} {
		if _, err := sim.Run(w, 0, p.Join(id, nil)); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("Join(%q) = %v, want ErrInvalidPath", id, err)
		}
	}
	var np *partition.Partitioner
	if _, err := sim.Run(w, 0, np.Join("a", nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Join = %v", err)
	}
	if _, err := sim.Run(w, 0, partition.Hold{Item: "q0"}.Fenced()); !errors.Is(err, partition.ErrNotHeld) {
		t.Errorf("Fenced on a zero Hold = %v, want ErrNotHeld", err)
	}
}

// Members divide the set as kazoo's default function does; a member that
// joins takes its share from the others, one that leaves gives its items
// up, and one whose session expires loses them to the others.
func TestRebalance(t *testing.T) {
	w := newWorld(t, 1, 3)
	p := newSet(t)
	ms := []*partition.Member{join(t, w, p, 0), nil, nil}
	if !w.Settle(func() bool { return balanced(ms) }) {
		t.Fatalf("one member: holds %v", ms[0].Held())
	}
	ms[1], ms[2] = join(t, w, p, 1), join(t, w, p, 2)
	joined := w.Clock.Now()
	if !w.Settle(func() bool { return balanced(ms) }) {
		t.Fatalf("three members: %v / %v / %v", ms[0].Held(), ms[1].Held(), ms[2].Held())
	}
	// The bound: once the party is stable, the items move within Stable
	// (the wait for the party to stay unchanged) and a few round trips,
	// which take no simulated time here.
	if d := w.Clock.Now().Sub(joined); d > stable+10*time.Millisecond {
		t.Fatalf("balanced %v after the last join, want within Stable (%v)", d, stable)
	}
	if _, err := sim.Run(w, 1, ms[1].Leave()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(ms[1].Err(), partition.ErrLeft) || len(ms[1].Held()) != 0 {
		t.Fatalf("after Leave: err %v, held %v", ms[1].Err(), ms[1].Held())
	}
	ms[1] = nil
	if !w.Settle(func() bool { return balanced(ms) }) {
		t.Fatalf("after a leave: %v / %v", ms[0].Held(), ms[2].Held())
	}
	// Member 2's session expires: its items go to member 0 once the
	// party shows it gone, and it joins again on its new session.
	w.Server.Expire(w.Conns[2])
	if !w.Settle(func() bool { return balanced(ms) }) {
		t.Fatalf("after an expiry: %v / %v", ms[0].Held(), ms[2].Held())
	}
	for i, m := range ms {
		if m != nil {
			if _, err := sim.Run(w, i, m.Leave()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if w.Settle(func() bool { return len(w.Children("/work/party")) == 0 }); len(w.Children("/work/party")) != 0 {
		t.Fatalf("party nodes left: %v", w.Children("/work/party"))
	}
	for _, it := range items {
		if ns := w.Children(p.ItemDir(it)); len(ns) != 0 {
			t.Fatalf("lock nodes left under %s: %v", it, ns)
		}
	}
}

// An Assign that names items outside the set, or nothing at all, is
// followed only within the set: the member holds the set's items it was
// given and nothing else, and an empty set is Acquired at once.
func TestAssignOutsideTheSet(t *testing.T) {
	w := newWorld(t, 1, 1)
	p, err := partition.New("/odd", []string{"a", "b"}, partition.WithStable(stable),
		partition.WithAssign(func(string, []string, []string) []string { return []string{"b", "zz", "../x", ""} }))
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.Run(w, 0, p.Join("m", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return m.State() == partition.Acquired }) {
		t.Fatalf("state %v, err %v", m.State(), m.Err())
	}
	if h := m.Held(); len(h) != 1 || h[0].Item != "b" || m.Err() != nil {
		t.Fatalf("held %v, err %v; want b only", h, m.Err())
	}
	empty, err := partition.New("/none", nil, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.Run(w, 0, empty.Join("m", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return e.State() == partition.Acquired }) || len(e.Held()) != 0 {
		t.Fatalf("empty set: state %v, held %v", e.State(), e.Held())
	}
}

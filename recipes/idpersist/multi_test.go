package idpersist_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// multiWorld: w with its replicas serving every child of /all-sequences.
type multiWorld struct {
	*world
	stores *idpersist.DirStores
	ids    map[string]map[int64]bool
	max    map[string]int64
	order  map[string][]int64
	// twice counts IDs handed out twice; with allowTwice they are
	// counted, not reported (a canary's run).
	twice      int
	allowTwice bool
}

func newMultiWorld(t *testing.T, seed uint64, n int) *multiWorld {
	t.Helper()
	return multiOn(t, newWorld(t, seed, n, fakezk.Config{}))
}

// multiOn serves many sequences in w: Parent /all-sequences, Limits
// /all-limits, the marks in a directory of the test's.
func multiOn(t *testing.T, w *world) *multiWorld {
	t.Helper()
	st, err := idpersist.NewDirStores(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w.cfg = idpersist.Config{Parent: "/all-sequences", Limits: "/all-limits", Election: "/ids/election",
		Stores: st, Chunk: 10, LowWater: 3}
	return &multiWorld{world: w, stores: st, ids: map[string]map[int64]bool{}, max: map[string]int64{}, order: map[string][]int64{}}
}

func (m *multiWorld) mark(name string) int64 {
	m.t.Helper()
	st, err := m.stores.Mark(name)
	if err != nil {
		m.t.Fatal(err)
	}
	v, err := st.Load()
	if err != nil {
		m.t.Fatal(err)
	}
	return v
}

// drawNamed has client i draw n IDs from sequence name, checking each
// against the IDs of that sequence and its durable mark.
func (m *multiWorld) drawNamed(i int, name string, n int) func() bool {
	cfg := m.cfg.Named(name)
	if m.ids[name] == nil {
		m.ids[name] = map[int64]bool{}
	}
	left := n
	var next func()
	next = func() {
		if left == 0 {
			return
		}
		executor.Submit(m.Execs[i], idpersist.Next(cfg), func(id int64, err error) {
			switch {
			case err == nil:
				if m.ids[name][id] {
					m.twice++
					if !m.allowTwice {
						m.t.Errorf("seed %d: %s: id %d handed out twice", m.seed, name, id)
					}
				}
				if mk := m.mark(name); id > mk {
					m.t.Errorf("seed %d: %s: id %d above the durable mark %d", m.seed, name, id, mk)
				}
				m.ids[name][id] = true
				m.order[name] = append(m.order[name], id)
				m.max[name] = max(m.max[name], id)
				left--
			case errors.Is(err, task.ErrSessionExpired):
			case errors.Is(err, task.ErrClosed):
				return
			default:
				m.t.Errorf("seed %d: client %d on %s: %v", m.seed, i, name, err)
				return
			}
			next()
		})
	}
	next()
	return func() bool { return left == 0 }
}

// create makes the sequence node name hold v, through client i.
func (m *multiWorld) create(i int, name string, v int64) {
	m.t.Helper()
	var (
		err  error
		done bool
	)
	executor.Submit(m.Execs[i], task.Create("/all-sequences/"+name, seqid.Encode(v), task.Persistent), func(_ string, e error) { err, done = e, true })
	m.settle(func() bool { return done })
	if err != nil {
		m.t.Fatalf("create %s: %v", name, err)
	}
}

func (m *multiWorld) remove(i int, name string) {
	m.t.Helper()
	var (
		err  error
		done bool
	)
	executor.Submit(m.Execs[i], task.Delete("/all-sequences/"+name, task.AnyVersion), func(_ task.Unit, e error) { err, done = e, true })
	m.settle(func() bool { return done })
	if err != nil {
		m.t.Fatalf("delete %s: %v", name, err)
	}
}

func (m *multiWorld) live(name string) bool {
	m.t.Helper()
	names, err := m.stores.Names()
	if err != nil {
		m.t.Fatal(err)
	}
	return slices.Contains(names, name)
}

// checkMarks: each sequence's limit node is at or below its mark, and so
// is every ID drawn from it.
func (m *multiWorld) checkMarks(names ...string) {
	m.t.Helper()
	for _, n := range names {
		mk := m.mark(n)
		if l := m.node(0, "/all-limits/"+n); l > mk {
			m.t.Errorf("%s: limit %d above the mark %d", n, l, mk)
		}
		if m.max[n] > mk {
			m.t.Errorf("%s: id %d above the mark %d", n, m.max[n], mk)
		}
	}
}

// Sequences added and removed while the leader runs are picked up with no
// restart: an added one is served (IDs above its starting value, bounded by
// its own mark), a removed one is retired and no longer served.
func TestDynamicSequencesAddedAndRemoved(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		m := newMultiWorld(t, seed, 4)
		r0, r1 := m.replica(0), m.replica(1)
		m.settle(func() bool { return r0.Leading() || r1.Leading() })
		m.create(2, "a", 0)
		m.settle(m.drawNamed(2, "a", 15))

		m.create(3, "b", 100) // added while the leader runs
		m.settle(allOf(m.drawNamed(2, "a", 15), m.drawNamed(3, "b", 25)))
		for id := range m.ids["b"] {
			if id <= 100 {
				t.Fatalf("seed %d: b handed out %d, not above its starting value 100", seed, id)
			}
		}
		if !m.live("a") || !m.live("b") {
			t.Fatalf("seed %d: a and b not both registered live", seed)
		}
		m.checkMarks("a", "b")

		m.remove(3, "a") // removed while the leader runs
		m.settle(func() bool { return !m.live("a") })
		// Its limit node is kept (retire): made again, the next life's
		// would share versions a generator read in this one.
		if l := m.node(0, "/all-limits/a"); l == -1 {
			t.Fatalf("seed %d: limit of the removed sequence deleted", seed)
		}
		// Not served any more: a draw on it waits.
		stuck := m.drawNamed(2, "a", 1)
		for range 50 {
			m.Drive()
			m.Clock.AdvanceToNext()
		}
		if stuck() {
			t.Fatalf("seed %d: an id was drawn from the removed sequence", seed)
		}
		// Added again under the same name, from 0: it resumes above the
		// mark of its earlier life, so no ID repeats.
		oldMax := m.max["a"]
		m.create(3, "a", 0)
		m.settle(stuck)
		m.settle(m.drawNamed(2, "a", 5))
		if m.order["a"][len(m.order["a"])-6] <= oldMax {
			t.Fatalf("seed %d: a added again handed out %d, not above %d", seed, m.order["a"][len(m.order["a"])-6], oldMax)
		}
		m.checkMarks("a")
		// b is still served.
		m.settle(m.drawNamed(3, "b", 5))
		m.checkMarks("b")
		if turns := r0.Turns() + r1.Turns(); turns != 1 {
			t.Fatalf("seed %d: %d leader turns, want 1 (no restart)", seed, turns)
		}
	}
}

// A total data wipe with several live sequences and one retired: the
// leader restores every live sequence to its mark (IDs resume at mark+1,
// above every earlier ID) and does not bring the retired one back.
func TestDynamicWipeRestoresEverySequence(t *testing.T) {
	for seed := uint64(11); seed <= 14; seed++ {
		m := newMultiWorld(t, seed, 4)
		m.replica(0)
		m.replica(1)
		m.settle(func() bool { return len(m.leaders()) == 1 })
		m.create(2, "a", 0)
		m.create(2, "b", 500)
		m.create(2, "gone", 0)
		m.settle(allOf(m.drawNamed(2, "a", 13), m.drawNamed(3, "b", 17), m.drawNamed(2, "gone", 3)))
		m.remove(3, "gone")
		m.settle(func() bool { return !m.live("gone") })
		before := map[string]int64{"a": m.max["a"], "b": m.max["b"]}
		marks := map[string]int64{"a": m.mark("a"), "b": m.mark("b")}
		n := map[string]int{"a": len(m.order["a"]), "b": len(m.order["b"])}

		m.Server.Wipe()
		m.settle(allOf(m.drawNamed(2, "a", 13), m.drawNamed(3, "b", 17)))
		for _, name := range []string{"a", "b"} {
			after := m.order[name][n[name]:]
			if after[0] != marks[name]+1 {
				t.Fatalf("seed %d: %s: first id after the wipe %d, want mark+1 = %d", seed, name, after[0], marks[name]+1)
			}
			for _, id := range after {
				if id <= before[name] {
					t.Fatalf("seed %d: %s: id %d after the wipe, not above %d", seed, name, id, before[name])
				}
			}
		}
		m.checkMarks("a", "b")
		if m.node(0, "/all-sequences/gone") != -1 || m.live("gone") {
			t.Fatalf("seed %d: the retired sequence came back after the wipe", seed)
		}
	}
}

func TestDynamicConfig(t *testing.T) {
	st, err := idpersist.NewDirStores(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good := idpersist.Config{Parent: "/p", Limits: "/l", Election: "/e", Stores: st}
	if _, err := idpersist.NewReplica(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
	bad := []idpersist.Config{
		{Parent: "/p", Limits: "/p/l", Election: "/e", Stores: st},
		{Parent: "/p", Election: "/e", Stores: st},
		{Parent: "/p", Limits: "/l", Election: "/e"},
		{Parent: "/p", Limits: "/l", Election: "/e", Stores: st, Sequence: "/s"},
	}
	for _, c := range bad {
		if _, err := idpersist.NewReplica(c); !errors.Is(err, idpersist.ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
	if _, err := idpersist.NewClient(nil, good); err == nil {
		t.Error("generator on nil executor accepted")
	}
	if n := good.Named("x"); n.Sequence != "/p/x" || n.Limit != "/l/x" {
		t.Errorf("Named: %+v", n)
	}
	if _, err := st.Mark("a/b"); !errors.Is(err, idpersist.ErrBadPath) {
		t.Errorf("Mark(a/b): %v", err)
	}
}

func TestDirStores(t *testing.T) {
	dir := t.TempDir()
	st, err := idpersist.NewDirStores(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b", "a", "b"} {
		if err := st.Register(n); err != nil {
			t.Fatal(err)
		}
	}
	a, err := st.Mark("a")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Store(42); err != nil {
		t.Fatal(err)
	}
	if err := st.Retire("a"); err != nil {
		t.Fatal(err)
	}
	if err := st.Retire("never"); err != nil {
		t.Fatalf("retire of a name never registered: %v", err)
	}
	again, err := idpersist.NewDirStores(dir) // as another replica, or after a restart
	if err != nil {
		t.Fatal(err)
	}
	if names, err := again.Names(); err != nil || !slices.Equal(names, []string{"b"}) {
		t.Fatalf("names %v, %v; want [b]", names, err)
	}
	a2, _ := again.Mark("a")
	if v, err := a2.Load(); err != nil || v != 42 {
		t.Fatalf("retired mark %d, %v; want 42 kept", v, err)
	}
	for _, bad := range []string{"", ".", "..", "x/y"} {
		if err := st.Register(bad); !errors.Is(err, idpersist.ErrBadPath) {
			t.Errorf("Register(%q): %v", bad, err)
		}
	}
	if _, err := idpersist.NewDirStores(dir + "/missing"); !errors.Is(err, idpersist.ErrBadPath) {
		t.Errorf("missing dir: %v", err)
	}
}

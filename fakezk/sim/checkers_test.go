package sim_test

import (
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

func newTestWorld(t *testing.T, clients int) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 3, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func TestIDs(t *testing.T) {
	s := sim.NewIDs()
	s.Call(0)
	if err := s.Return(0, 5); err != nil {
		t.Fatal(err)
	}
	s.Call(1)
	s.Unknown(1)
	s.Call(1)
	if err := s.Return(1, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Linearizable(); err != nil {
		t.Fatalf("in order with a gap and an unknown call: %v", err)
	}
	if err := s.Add(2, 7); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a repeat was not refused: %v", err)
	}
	// A call that starts after 7 was returned and gets 6 is out of order.
	s.Call(0)
	if err := s.Return(0, 6); err != nil {
		t.Fatal(err)
	}
	if err := s.Linearizable(); err == nil {
		t.Fatal("6 after 7 in real-time order passed")
	}
	if s.Len() != 3 || s.Max() != 7 || s.Calls() != 4 {
		t.Fatalf("len %d max %d calls %d", s.Len(), s.Max(), s.Calls())
	}
}

func TestLeaders(t *testing.T) {
	w := newTestWorld(t, 0)
	l := sim.NewLeaders(w)
	if err := l.Begin(0); err != nil {
		t.Fatal(err)
	}
	w.Clock.Advance(time.Second)
	if err := l.Begin(1); err == nil || !strings.Contains(err.Error(), "client 0 has acted since 0s") {
		t.Fatalf("two acting leaders passed: %v", err)
	}
	l.End(0)
	l.End(1)
	if err := l.Begin(1); err != nil {
		t.Fatalf("a leader after the last one ended: %v", err)
	}
	if got := l.Acting(); len(got) != 1 || got[0] != 1 || l.Terms() != 3 {
		t.Fatalf("acting %v, terms %d", got, l.Terms())
	}
}

// A leader paused (clock jumps) past the margin is not judged: fencing is.
func TestLeadersPaused(t *testing.T) {
	w := newTestWorld(t, 0)
	l := sim.NewLeaders(w)
	l.Margin = 2 * time.Second
	if err := l.Begin(0); err != nil {
		t.Fatal(err)
	}
	w.Jump(time.Second)
	w.Clock.Advance(3 * time.Second)
	if err := l.Begin(1); err == nil {
		t.Fatal("an overlap after a jump within the margin passed")
	}
	w.Jump(1500 * time.Millisecond)
	if err := l.Begin(1); err != nil || l.Excused != 1 {
		t.Fatalf("an overlap after jumps past the margin: %v (excused %d)", err, l.Excused)
	}
	l.End(0)
	l.End(1)
	if err := l.Begin(2); err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(3); err == nil {
		t.Fatal("an overlap with a leader that began after the jumps passed")
	}
}

func TestTasks(t *testing.T) {
	s := sim.NewTasks()
	s.Submit("a")
	s.Submit("b")
	if err := s.Execute(0, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Execute(1, "a"); err == nil {
		t.Fatal("a task executed twice passed")
	}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "[b]") {
		t.Fatalf("a lost task passed: %v", err)
	}
	if err := s.Execute(1, "b"); err != nil || s.Check() != nil || s.Executed() != 2 {
		t.Fatalf("all executed: %v %v %d", err, s.Check(), s.Executed())
	}
	// An excused task is not lost; another unexecuted one still is.
	s.Submit("c")
	s.Submit("d")
	s.Excuse("c")
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "1 of 4 tasks lost: [d]") {
		t.Fatalf("with c excused and d never executed: %v", err)
	}
	if err := s.Execute(0, "c"); err != nil || s.Execute(1, "c") == nil {
		t.Fatal("an excused task executed twice passed")
	}
}

func TestFencing(t *testing.T) {
	w := newTestWorld(t, 1)
	if _, err := sim.Run(w, 0, task.Create("/log", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	write := func(token int64, kind string) {
		t.Helper()
		if _, err := sim.Run(w, 0, task.Multi(sim.FencedEntry("/log", token, kind))); err != nil {
			t.Fatal(err)
		}
	}
	write(10, "enter")
	write(10, "exit")
	write(12, "enter")
	if n, err := sim.CheckFencing(w, "/log"); err != nil || n != 2 {
		t.Fatalf("good log: %d sections, %v", n, err)
	}
	write(10, "exit") // a holder with an older token writes after a newer one
	if _, err := sim.CheckFencing(w, "/log"); err == nil || !strings.Contains(err.Error(), "interleave") {
		t.Fatalf("interleaving passed: %v", err)
	}
	write(12, "late")
	if _, err := sim.CheckFencing(w, "/log"); err == nil {
		t.Fatal("an applied late write passed")
	}
}

func TestTreeEquals(t *testing.T) {
	w := newTestWorld(t, 1)
	for _, p := range []string{"/c", "/c/a", "/c/a/x", "/c/b"} {
		if _, err := sim.Run(w, 0, task.Create(p, []byte(p), task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"a": "/c/a", "a/x": "/c/a/x", "b": "/c/b"}
	if err := sim.TreeEquals(w, 0, "/c", want); err != nil {
		t.Fatal(err)
	}
	want["b"] = "stale"
	delete(want, "a/x")
	want["gone"] = "x"
	err := sim.TreeEquals(w, 0, "/c", want)
	for _, s := range []string{`/c/b: cache has "stale", server has "/c/b"`, "/c/gone: cache has", "/c/a/x: server has"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("difference %q not reported: %v", s, err)
		}
	}
	if err := sim.ChildrenEqual(w, "/c", []string{"b", "a"}); err != nil {
		t.Fatal(err)
	}
	if err := sim.ChildrenEqual(w, "/c", []string{"a"}); err == nil {
		t.Fatal("a missing child passed")
	}
	// As many names as children, each there, but not the children.
	for _, bad := range [][]string{{"a", "a"}, {"a", "a/x"}, {"b", ""}} {
		if err := sim.ChildrenEqual(w, "/c", bad); err == nil {
			t.Errorf("ChildrenEqual(/c, %q) passed", bad)
		}
	}
	if err := sim.ChildrenEqual(w, "/none", nil); err != nil {
		t.Errorf("no children of a missing directory: %v", err)
	}
}

// Subtree finds every node under its root, those it was told of and
// those it was not, with the server's data and Stats.
func TestSubtree(t *testing.T) {
	w := newTestWorld(t, 1)
	for _, p := range []string{"/c", "/c/a", "/c/a/x", "/c/b", "/d"} {
		if _, err := sim.Run(w, 0, task.Create(p, []byte(p), task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	for _, known := range [][]string{
		{"/c/a", "/c/a/x", "/c/b", "/c/gone", "/d"}, // all, and more
		{"/c/a", "/c/b"},   // /c/a/x unknown: /c/a counts it
		{"/c/a/x", "/c/b"}, // /c/a unknown: /c counts it
		nil,
	} {
		got := sim.Subtree(w, "/c", known)
		if len(got) != 4 {
			t.Errorf("known %v: Subtree holds %d nodes, want /c, /c/a, /c/a/x, /c/b", known, len(got))
		}
		for _, p := range []string{"/c", "/c/a", "/c/a/x", "/c/b"} {
			d, st, _ := w.NodeData(p)
			if n, ok := got[p]; !ok || n.Stat != st || string(n.Data) != string(d) {
				t.Errorf("known %v: Subtree[%s] = %+v, %v; server %q %+v", known, p, n, ok, d, st)
			}
		}
	}
	if got := sim.Subtree(w, "/none", []string{"/none/a"}); len(got) != 0 {
		t.Errorf("Subtree of a missing root: %v", got)
	}
}

// Bad input gets an error, not a panic.
func TestBadInput(t *testing.T) {
	if _, err := sim.New(sim.Config{Clients: -1}); err == nil {
		t.Error("negative clients accepted")
	}
	if _, err := sim.New(sim.Config{Clients: 1, SessionTimeout: -time.Second}); err == nil {
		t.Error("negative session timeout accepted")
	}
	res := sim.RunSeed(sim.Scenario{Name: "bad", Clients: -2}, 1, false)
	if res.Err == nil || res.Kind != sim.SetupFailed {
		t.Errorf("negative clients: %v %v", res.Kind, res.Err)
	}
	if got := sim.Sample(0, 10); got != nil {
		t.Errorf("Sample(0) = %v", got)
	}
}

// A workload that loops without time passing is a liveness failure,
// reported, not a hang.
func TestStallIsLiveness(t *testing.T) {
	sc := sim.Scenario{
		Name: "spin", Clients: 1,
		Workload: func(r *sim.Trial) {
			var spin func()
			spin = func() {
				sim.Submit(r.World, 0, c.Map(task.Exists("/"), func(*task.Stat) int { spin(); return 0 }))
			}
			spin()
		},
	}
	res := sim.RunSeed(sc, 1, false)
	if res.Kind != sim.Liveness || !strings.Contains(res.Err.Error(), "time never passed") {
		t.Fatalf("got %v: %v", res.Kind, res.Err)
	}
}

// A leader that froze or crashed counts as acting no longer: the next
// leader's Begin passes; a Begin of the old process after the pause is
// judged again.
func TestLeadersAcrossPauseAndCrash(t *testing.T) {
	w := newTestWorld(t, 3)
	l := sim.NewLeaders(w)
	if err := l.Begin(0); err != nil {
		t.Fatal(err)
	}
	w.Pause(0, 10*time.Second)
	if err := l.Begin(1); err != nil {
		t.Fatalf("a leader after the old one froze: %v", err)
	}
	w.Clock.Advance(10 * time.Second)
	if err := l.Begin(0); err != nil {
		t.Fatalf("the resumed client, not yet told its session ended, was judged: %v", err)
	}
	w.Drive() // it hears of the expiry and goes on with a new session
	if err := l.Begin(0); err == nil {
		t.Fatal("a new term of the resumed client beside the acting one passed")
	}
	if err := w.Crash(1, false); err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(2); err != nil {
		t.Fatalf("a leader after the old one crashed: %v", err)
	}
	if got := l.Acting(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("acting %v", got)
	}
}

// Two campaigns on one client's session (Siblings maps the second's key
// to the client): judged as two clients, so the second acting beside the
// first fails; and a crash of the client ends both terms.
func TestLeadersSiblings(t *testing.T) {
	w := newTestWorld(t, 2)
	l := sim.NewLeaders(w)
	l.Siblings = map[int]int{10: 0}
	if err := l.Begin(0); err != nil {
		t.Fatal(err)
	}
	w.Clock.Advance(time.Second)
	if err := l.Begin(10); err == nil || !strings.Contains(err.Error(), "client 0's campaign 10 acts as leader") {
		t.Fatalf("a sibling acting beside its client's campaign passed: %v", err)
	}
	l.End(0)
	l.End(10)
	if err := l.Begin(10); err != nil {
		t.Fatalf("the sibling after the other ended: %v", err)
	}
	if err := w.Crash(0, false); err != nil {
		t.Fatal(err)
	}
	if got := l.Acting(); len(got) != 0 {
		t.Fatalf("acting %v after the sibling's process crashed", got)
	}
	if err := l.Begin(1); err != nil {
		t.Fatalf("a leader after the sibling's process crashed: %v", err)
	}
}

package sim_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// A world under a root: the world creates the root and its ancestors, the
// clients' nodes land below it on the server, and the world's readers of
// the tree take and give the clients' paths.
func TestWorldUnderRoot(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 3, Clients: 2, Root: "/a/b"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"/a", "/a/b"} {
		if _, ok := w.Server.NodeStat(p); !ok {
			t.Fatalf("the world did not create %s", p)
		}
	}
	if _, err := sim.Run(w, 0, task.Create("/x", []byte("1"), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/x/y", []byte("2"), task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	if d, _, ok := w.Server.NodeData("/a/b/x/y"); !ok || string(d) != "2" {
		t.Fatalf("server has %q (%v) at /a/b/x/y; paths %v", d, ok, w.Server.Paths())
	}
	if _, ok := w.Server.NodeStat("/x"); ok {
		t.Fatal("a client's node escaped the root")
	}
	if got := w.Paths(); !slices.Equal(got, []string{"/", "/x", "/x/y"}) {
		t.Errorf("Paths %v", got)
	}
	if got := w.Children("/"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("Children(/) %v", got)
	}
	if got := w.Children("/x"); !slices.Equal(got, []string{"y"}) {
		t.Errorf("Children(/x) %v", got)
	}
	if st, ok := w.NodeStat("/x/y"); !ok || st.EphemeralOwner != w.Conns[1].SessionID() {
		t.Errorf("NodeStat(/x/y) %+v %v", st, ok)
	}
	if d, _, ok := w.NodeData("/x"); !ok || string(d) != "1" {
		t.Errorf("NodeData(/x) %q %v", d, ok)
	}
	if err := w.SetCounters("/x", 7, 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := w.Server.NodeStat("/a/b/x"); st.Version != 7 {
		t.Errorf("SetCounters reached version %d", st.Version)
	}
	for client, server := range map[string]string{"/": "/a/b", "/x": "/a/b/x", "/x/y": "/a/b/x/y"} {
		if got := w.ServerPath(client); got != server {
			t.Errorf("ServerPath(%s) = %s", client, got)
		}
		if got, ok := w.ClientPath(server); !ok || got != client {
			t.Errorf("ClientPath(%s) = %s %v", server, got, ok)
		}
	}
	for _, p := range []string{"/a", "/a/bc", "/zookeeper"} {
		if got, ok := w.ClientPath(p); ok {
			t.Errorf("ClientPath(%s) = %s, outside the root", p, got)
		}
	}
	tree, err := sim.ReadTree(w, 0, "/x")
	if err != nil || len(tree) != 1 || tree["y"] != "2" {
		t.Errorf("ReadTree(/x) = %v, %v", tree, err)
	}

	// Total ensemble loss: the world creates the root again, so the
	// clients, on their new sessions, can create below it.
	w.Wipe()
	if _, ok := w.Server.NodeStat("/a/b"); !ok {
		t.Fatal("the root is not there again after the wipe")
	}
	if got := w.Paths(); !slices.Equal(got, []string{"/"}) {
		t.Errorf("Paths after the wipe %v", got)
	}
	w.Drive() // the clients learn their sessions expired and take new ones
	if _, err := sim.Run(w, 0, c.Retry(task.Create("/z", nil, task.Persistent), c.Policy{})); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Server.NodeStat("/a/b/z"); !ok {
		t.Errorf("create after the wipe: %v", w.Server.Paths())
	}
}

// A root that is not a valid path is refused; "/" is no root.
func TestWorldRootValidation(t *testing.T) {
	for _, root := range []string{"a", "/a/", "/a//b"} {
		if w, err := sim.New(sim.Config{Root: root}); err == nil {
			w.Close()
			t.Errorf("root %q accepted", root)
		}
	}
	w, err := sim.New(sim.Config{Clients: 1, Root: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Root() != "" || w.ServerPath("/x") != "/x" {
		t.Errorf("root / is %q, maps /x to %s", w.Root(), w.ServerPath("/x"))
	}
}

// Explore runs one seed in four under ExploreRoot, but a scenario's own
// root and a regression seed's recorded one.
func TestExplored(t *testing.T) {
	sc := sim.Scenario{Regressions: []sim.Regression{{Seed: 8}, {Seed: 9, Root: "/r"}}}
	for seed, want := range map[uint64]string{1: "", 4: sim.ExploreRoot, 5: "", 12: sim.ExploreRoot, 8: "", 9: "/r"} {
		if got := sim.Explored(sc, seed).Root; got != want {
			t.Errorf("seed %d: root %q, want %q", seed, got, want)
		}
	}
	own := sc
	own.Root = "/own"
	if got := sim.Explored(own, 4).Root; got != "/own" {
		t.Errorf("a scenario's own root became %q", got)
	}
	n := 0
	for seed := uint64(1); seed <= 400; seed++ {
		if sim.RootedSeed(seed) {
			n++
		}
	}
	if n != 100 {
		t.Errorf("%d of 400 seeds rooted, want 100", n)
	}
}

// A regression seed recorded before its scenario took a class replays
// without it: the flags of its Regression reach the scenario it runs
// with, and only its own.
func TestExploredRegressionFlags(t *testing.T) {
	sc := sim.Scenario{
		Faults:         sim.Faults{Allow: sim.AllFaults | sim.CounterFaults},
		OperatorWrites: true,
		OutageEnds:     true,
		Regressions: []sim.Regression{
			{Seed: 8, NoTwins: true, NoLagWatched: true, NoRestartLag: true, NoCounters: true, NoOperatorWrites: true, NoOutageEnds: true},
			{Seed: 9},
		},
	}
	old := sim.Explored(sc, 8)
	if !old.NoTwins || !old.NoLagWatched || !old.NoRestartLag || old.OperatorWrites || old.Faults.Allow != sim.AllFaults || old.OutageEnds {
		t.Errorf("seed 8 runs with NoTwins %v, NoLagWatched %v, NoRestartLag %v, OperatorWrites %v, faults %v, OutageEnds %v; want the classes it was recorded with",
			old.NoTwins, old.NoLagWatched, old.NoRestartLag, old.OperatorWrites, old.Faults.Allow, old.OutageEnds)
	}
	for _, seed := range []uint64{9, 10} {
		now := sim.Explored(sc, seed)
		if now.NoTwins || now.NoLagWatched || now.NoRestartLag || !now.OperatorWrites || now.Faults.Allow != sc.Faults.Allow || !now.OutageEnds {
			t.Errorf("seed %d lost a class of its scenario: %+v", seed, now)
		}
	}
}

// The lock + ID scenario under a root: it passes, its checkers (the
// fencing log, read from the server's tree) see the critical sections
// below the root, and the operator fault finds the lock's nodes there.
func TestRootedScenario(t *testing.T) {
	n := 12
	if testing.Short() {
		n = 4
	}
	sc, s := newLockID(4, 10*time.Second)
	sc.Root = sim.ExploreRoot
	sc.Faults.MaxRate = 0.03
	st := sim.Check(t, sc, n)
	if st.Failures() > 0 {
		return
	}
	if st.Rooted != n {
		t.Errorf("%d of %d seeds counted under a root", st.Rooted, n)
	}
	if s.sections == 0 || s.idsDrawn == 0 {
		t.Errorf("the checkers saw %d critical sections and %d ids below the root", s.sections, s.idsDrawn)
	}
	if st.Fired[sim.Operator] == 0 {
		t.Error("the operator never found a node below the root")
	}
}

// A node outside the clients' root fails the seed: a world whose clients
// escaped their root would leave the checkers that read below it nothing
// to judge.
func TestEscapeFromRootFails(t *testing.T) {
	sc := sim.Scenario{
		Name: "escape", Clients: 1, Root: "/app",
		Setup: func(r *sim.Trial) error { return r.Server.AdminCreate("/stray", nil, 0) },
		Live:  func(*sim.Trial) bool { return true },
	}
	res := sim.RunSeed(sc, 1, false)
	if res.Kind != sim.Safety || !strings.Contains(res.Err.Error(), "/stray") {
		t.Fatalf("got %v (%v), want a safety failure naming /stray", res.Err, res.Kind)
	}
	sc.Setup = nil
	if res := sim.RunSeed(sc, 1, false); res.Err != nil {
		t.Fatalf("without the stray node: %v", res.Err)
	}
}

// Explore runs one seed in four with the executors' sync after a
// reconnect on (SyncedSeed), drawn apart from the root; a regression seed
// runs with it only if it failed with it, and a scenario that sets it
// runs every seed with it.
func TestExploredSync(t *testing.T) {
	sc := sim.Scenario{Regressions: []sim.Regression{{Seed: 8}, {Seed: 9, SyncAfterReconnect: true}}}
	synced, both := 0, 0
	for seed := uint64(10); seed < 4010; seed++ {
		got := sim.Explored(sc, seed)
		if got.SyncAfterReconnect != sim.SyncedSeed(seed) {
			t.Fatalf("seed %d: sync %v, SyncedSeed %v", seed, got.SyncAfterReconnect, sim.SyncedSeed(seed))
		}
		if got.SyncAfterReconnect {
			synced++
			if got.Root != "" {
				both++
			}
		}
	}
	if synced < 900 || synced > 1100 || both < 175 || both > 325 {
		t.Errorf("%d of 4000 seeds synced (%d of them rooted), want about 1000 (250)", synced, both)
	}
	for seed := uint64(1); seed < 200; seed++ {
		if sim.SyncedSeed(seed) {
			sc.Regressions = append(sc.Regressions, sim.Regression{Seed: seed})
			if sim.Explored(sc, seed).SyncAfterReconnect {
				t.Errorf("regression seed %d recorded without the sync runs with it", seed)
			}
			break
		}
	}
	if !sim.Explored(sc, 9).SyncAfterReconnect {
		t.Error("regression seed 9, recorded with the sync, runs without it")
	}
	on := sc
	on.SyncAfterReconnect = true
	for _, seed := range []uint64{8, 9, 10, 11, 12} {
		if !sim.Explored(on, seed).SyncAfterReconnect {
			t.Errorf("seed %d of a scenario with the sync runs without it", seed)
		}
	}
}

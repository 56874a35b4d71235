package task

import "testing"

// What the common steps allocate, counted in plain builds only (Run's
// check that k is called once, and the race detector's instrumentation,
// add their own).

// RunIn in a child scope costs the scope and one function (its finish):
// whether it has delivered is kept in the scope.
func TestRunInAllocs(t *testing.T) {
	_, root := newStubRoot()
	one := Value(1)
	got := 0
	k := func(v int, err error) { got += v }
	n := testing.AllocsPerRun(100, func() { RunIn(root.Child(), one, k) })
	if n > 2 && !invariants {
		t.Errorf("RunIn(root.Child(), ...): %v allocations, want at most 2 (the scope, RunIn's finish)", n)
	}
	if got != 101 {
		t.Errorf("%d outcomes, want 101", got)
	}
}

// A watched request sent and answered costs one allocation per run of its
// task: the request, its wait, the Watch and, for an exists, the Stat it
// hands over are one value.
func TestWatchedRequestAllocs(t *testing.T) {
	rt, root := newSendRoot()
	exists, get, children := ExistsW("/a"), GetW("/a"), ChildrenW("/a")
	var watches []*Watch
	var stats []*Stat
	ke := func(sw StatWatch, err error) { watches, stats = append(watches, sw.Watch), append(stats, sw.Stat) }
	kg := func(dw DataWatch, err error) { watches = append(watches, dw.Watch) }
	kc := func(cw ChildrenWatch, err error) { watches = append(watches, cw.Watch) }
	n := testing.AllocsPerRun(100, func() {
		Run(root, exists, ke)
		Run(root, get, kg)
		Run(root, children, kc)
		for _, r := range rt.sent {
			r.Receive(Response{Stat: Stat{Version: 1}})
		}
		rt.sent = rt.sent[:0]
		watches, stats = watches[:0], stats[:0]
	})
	if n > 3 && !invariants {
		t.Errorf("an exists, a get and a children watched: %v allocations, want at most 3", n)
	}
	Run(root, exists, ke)
	Run(root, exists, ke)
	rt.take().Receive(Response{Stat: Stat{Version: 1}})
	rt.take().Receive(Response{Stat: Stat{Version: 2}})
	if stats[0] == stats[1] || stats[0].Version != 1 || stats[1].Version != 2 {
		t.Errorf("two runs of one ExistsW share their Stat, or mixed them up: %+v %+v", *stats[0], *stats[1])
	}
}

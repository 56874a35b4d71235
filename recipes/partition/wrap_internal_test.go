package partition

import (
	"math"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// An item's lock is taken by the lowest number in its directory. Once
// the directory's counter has run out (two billion creates, or
// fakezk's SetCounters), the server names every new node with int32's
// maximum: two contenders tie, and once the holder goes, both would see
// no lower number and hold the item at once. A contender whose number
// cannot be ordered withdraws and takes the lock again once the
// directory has been emptied and made afresh: one holder at a time.
func TestLockItemCounterExhausted(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const dir = "/x/locks/a"
	if err := w.Server.AdminCreate("/x", nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate("/x/locks", nil, 0); err != nil {
		t.Fatal(err)
	}
	first, err := sim.Run(w, 0, lockItem(dir, "p0", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := w.NodeStat(dir)
	if err := w.SetCounters(dir, st.Version, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	var got [3]*sim.Outcome[lockNode]
	for i := 1; i <= 2; i++ {
		got[i] = sim.Submit(w, i, lockItem(dir, "p"+string(rune('0'+i)), nil, nil))
	}
	w.Settle(func() bool { return false })
	for i := 1; i <= 2; i++ {
		if got[i].Done {
			t.Fatalf("contender %d holds beside the holder: %+v", i, got[i].V)
		}
	}
	// The holder gives the item up.
	if _, err := sim.Run(w, 0, task.Delete(first.path, task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return got[1].Done && got[2].Done })
	held := 0
	for i := 1; i <= 2; i++ {
		if got[i].Done && got[i].Err == nil {
			held++
		}
	}
	if held > 1 {
		t.Fatalf("both contenders hold the item: %+v and %+v (children %v)", got[1].V, got[2].V, w.Children(dir))
	}
	if held == 0 {
		t.Fatalf("nobody holds the item once the holder is gone: %+v %+v (children %v)", got[1], got[2], w.Children(dir))
	}
	// The one that holds releases: the other one takes it.
	winner, other := 1, 2
	if !got[1].Done || got[1].Err != nil {
		winner, other = 2, 1
	}
	if _, err := sim.Run(w, winner, task.Delete(got[winner].V.path, task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return got[other].Done }) || got[other].Err != nil {
		t.Fatalf("the other contender after the holder's release: %+v", got[other])
	}
}

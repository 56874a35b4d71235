package election_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// A Master candidate waiting behind the master node fails only with its
// scope's error or the session's end; a watch another user of the
// session takes away (RemoveWatches of type Any on the master node: a
// cache of that node stopping) is one more wake-up. Campaign failed with
// task.ErrWatchRemoved, so the backup gave up and no one took over when
// the primary went.
func TestMasterCampaignOutlivesAWatchRemoved(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	m, err := election.NewMaster("/mwr/master")
	if err != nil {
		t.Fatal(err)
	}
	l, err := mustRun(t, w, 0, m.Campaign())
	if err != nil {
		t.Fatal(err)
	}
	next := sim.Submit(w, 1, m.Campaign())
	w.Drive()
	if next.Done {
		t.Fatalf("the backup's campaign ended while the primary leads: %v", next.Err)
	}
	if _, err := sim.Run(w, 1, task.RemoveWatches(m.Path(), task.WatcherAny)); err != nil {
		t.Fatalf("RemoveWatches: %v", err)
	}
	w.Drive()
	if next.Done {
		t.Fatalf("the backup's campaign ended when another user of its session removed the watches on the master node: %v", next.Err)
	}
	if _, err := mustRun(t, w, 0, l.Resign()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return next.Done }) || next.Err != nil || !next.V.IsLeader() {
		t.Fatalf("the backup after the primary resigned: done %v, %v", next.Done, next.Err)
	}
}

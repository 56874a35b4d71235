package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// Two processes started with one executor seed (twins) draw the same
// random numbers, and a directory deleted while empty starts its counter
// again: the twin's contender must not get the very name of the other's
// lost node, or the other's fenced write, checked on that name and
// version, would pass while the twin holds.
func TestTwinAfterReset(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 7, Clients: 2, Twin: &sim.Twin{Of: 0, Client: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := mustRun(t, w, 0, task.Create("/data", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	l := mustLock(t, "/locks/t")
	h0, err := mustRun(t, w, 0, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	// An operator deletes the holder's node, then the empty directory;
	// the holder hears nothing for a second.
	w.Server.Delay(w.Conns[0], time.Second)
	for _, p := range []string{h0.Path(), "/locks/t"} {
		if err := w.Server.AdminDelete(p); err != nil {
			t.Fatal(err)
		}
	}
	h1, err := mustRun(t, w, 1, l.Acquire())
	if err != nil {
		t.Fatal(err)
	}
	if h1.Path() == h0.Path() {
		t.Errorf("the twin's contender took the lost holder's name %s", h1.Path())
	}
	_, err = mustRun(t, w, 0, h0.Fenced(&task.SetDataRequest{Path: "/data", Data: []byte("late"), Version: task.AnyVersion}))
	if !errors.Is(err, lock.ErrLockLost) {
		t.Errorf("the lost holder's fenced write while its twin holds: %v, want ErrLockLost", err)
	}
	if st, _ := w.Server.NodeStat("/data"); st.Version != 0 {
		t.Error("the lost holder's fenced write was applied while its twin holds")
	}
}

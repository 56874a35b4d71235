package sim_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

func TestRunAndChildren(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 7, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create("/a", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/a/x", []byte("1"), task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	if got := w.Children("/a"); len(got) != 1 || got[0] != "x" {
		t.Fatalf("children %v", got)
	}
	// A sleep of a simulated minute ends by advancing the clock, not by waiting.
	start := w.Clock.Now()
	if _, err := sim.Run(w, 0, c.Sleep(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if d := w.Clock.Now().Sub(start); d < time.Minute {
		t.Fatalf("clock advanced %v", d)
	}
}

func TestRunStuck(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	never := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Suspend(s, k, func(task.Cont[task.Unit]) func() { return func() {} })
	})
	if _, err := sim.Run(w, 0, never); !errors.Is(err, sim.ErrStuck) {
		t.Fatalf("got %v, want ErrStuck", err)
	}
}

// A crashed process's flows never deliver and its timers never fire; the
// new process has the same index, a new session, and the old session's
// ephemeral lives until the server expires it.
func TestCrash(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 5, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create("/e", nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	old, oldSess := w.Execs[0], w.Conns[0].SessionID()
	slept := sim.Submit(w, 0, c.Sleep(time.Second))
	if err := w.Crash(0, false); err != nil {
		t.Fatal(err)
	}
	if w.Execs[0] == old || w.Incarnation(0) != 1 {
		t.Fatal("client 0 was not replaced")
	}
	if _, err := sim.Run(w, 0, task.Sync("/")); err != nil {
		t.Fatal(err)
	}
	if s := w.Conns[0].SessionID(); s == oldSess || s == 0 {
		t.Fatalf("new process on session %#x, old %#x", s, oldSess)
	}
	w.Settle(func() bool { _, ok := w.Server.NodeStat("/e"); return !ok })
	if _, ok := w.Server.NodeStat("/e"); ok {
		t.Fatal("the dead process's ephemeral never went")
	}
	if d := w.Clock.Now().Sub(fakezk.Epoch); d < 4*time.Second {
		t.Fatalf("the dead process's session ended after %s, before its timeout", d)
	}
	if slept.Done {
		t.Fatal("a flow of the dead process delivered")
	}
}

// A paused process runs nothing while frozen; its session expires; after
// the pause its queued work runs first, then it learns of the expiry.
func TestPause(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 5, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create("/e", nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	slept := sim.Submit(w, 0, c.Sleep(time.Second))
	if !w.Pause(0, 10*time.Second) || w.Pause(0, time.Second) || !w.Paused(0) {
		t.Fatal("pause state")
	}
	w.Settle(func() bool { _, ok := w.Server.NodeStat("/e"); return !ok })
	if slept.Done {
		t.Fatal("a paused process ran its timer")
	}
	if w.Clock.Now().Sub(fakezk.Epoch) >= 10*time.Second {
		t.Fatal("the session outlived the pause")
	}
	w.Settle(func() bool { return slept.Done })
	if !slept.Done || w.Paused(0) || w.Pauses(0) != 1 {
		t.Fatal("the process did not run on after its pause")
	}
	// It learns of the expiry once it reads what was held: a later flow
	// runs on the new session.
	if _, err := sim.Run(w, 0, task.Sync("/")); err != nil {
		t.Fatal(err)
	}
	if sess, _ := w.Execs[0].Current(); sess.Epoch != 2 {
		t.Fatalf("session epoch %d after the pause, want 2", sess.Epoch)
	}
}

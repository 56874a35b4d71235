package sim_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
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

package rwlock

import (
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// A Client that checks the read locks it holds (each acquire does, to
// refuse a writer over them) sets their watches in one order, whatever
// the order of a map: one seed of a simulation gives one history.
func TestClientChecksHoldsInOrder(t *testing.T) {
	run := func() string {
		w, err := sim.New(sim.Config{Seed: 9, Clients: 1, Server: fakezk.Config{Trace: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := sim.Run(w, 0, task.Create("/rw", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		c, err := NewClient(w.Execs[0], "/rw/l")
		if err != nil {
			t.Fatal(err)
		}
		// Three readers acquire at once (none holds when each checks),
		// then a fourth checks the three.
		for k := range 4 {
			w.Go(0, func(a *sim.Actor) {
				if _, err := c.AcquireRead(a.Context()); err != nil {
					t.Errorf("acquire: %v", err)
				}
			})
			if k >= 2 {
				w.Drive()
			}
		}
		var watches []string
		for _, l := range w.Server.Trace() {
			if strings.Contains(l, " exists ") && strings.Contains(l, "watch") {
				watches = append(watches, l)
			}
		}
		return strings.Join(watches, "\n")
	}
	first := run()
	if strings.Count(first, "\n") < 2 {
		t.Fatalf("the fourth acquire watched fewer than 3 holds:\n%s", first)
	}
	for range 10 {
		if again := run(); again != first {
			t.Fatalf("one seed, two histories:\n%s\n---\n%s", first, again)
		}
	}
}

package seqid_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many IDs it draws:
// memcheck.Cycles cycles on one session leave the live scope count under
// the session scope where it was after the warm-up and the live heap
// within memcheck.Bound of it. A cycle is, by kind:
//
//   - next: one Next, the full round (get, then compare-and-set);
//   - counter: one Counter.Next, its one-write path;
//   - counter/contended: another client takes an ID, then Counter.Next,
//     whose write fails with BadVersion and falls back to the full round;
//   - allocator: four Allocator.Next from blocks of four, so that each
//     cycle reserves one block and uses it up (the allocator's list of
//     blocks must not keep what it handed out).
//
// seqid sets no watches, so nothing stays registered between cycles.
func TestMemoryFlatDraw(t *testing.T) {
	const path = "/mem/seq"
	for _, tc := range []struct {
		name    string
		clients int
		cycle   func(w *world) func() // makes the recipe's values, returns the cycle
	}{
		{"next", 1, func(w *world) func() {
			return func() { draw(w, 0, seqid.Next(path)) }
		}},
		{"counter", 1, func(w *world) func() {
			ct, err := seqid.NewCounter(path)
			if err != nil {
				w.t.Fatal(err)
			}
			return func() { draw(w, 0, ct.Next()) }
		}},
		{"counter/contended", 2, func(w *world) func() {
			ct, err := seqid.NewCounter(path)
			if err != nil {
				w.t.Fatal(err)
			}
			return func() {
				draw(w, 1, seqid.Next(path))
				draw(w, 0, ct.Next())
			}
		}},
		{"allocator", 1, func(w *world) func() {
			al, err := seqid.NewAllocator(path, 4)
			if err != nil {
				w.t.Fatal(err)
			}
			return func() {
				for range 4 {
					draw(w, 0, al.Next())
				}
				if n := al.Remaining(); n != 0 {
					w.t.Fatalf("%d IDs left in hand after using up a block", n)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, tc.clients, fakezk.Config{})
			w.create("/mem", nil)
			cycle := tc.cycle(w)
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) { cycle() })
			for _, err := range w.Errs {
				t.Errorf("detached flow failed: %v", err)
			}
		})
	}
}

// draw runs an ID draw on client i and fails the test on an error.
func draw(w *world, i int, next task.Task[int64]) {
	w.t.Helper()
	if _, err := run(w, i, next); err != nil {
		w.t.Fatalf("client %d: %v", i, err)
	}
}

package barrier_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// Package doc: constructors refuse "the root ... (task.ErrInvalidPath)",
// and N < 1 (task.ErrInvalidArgument). A zero DoubleBarrier (not made by
// NewDouble: no directory, N 0) entered the root: it made its participant
// node there, and with a node "/ready" there (anyone's) it passed, N 0.
// Its Enter is refused now, as a nil one's is.
func TestZeroDoubleBarrierIsRefused(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	if _, err := sim.Run(w, 0, task.Create("/ready", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	var d barrier.DoubleBarrier
	p, err := sim.Run(w, 0, d.Enter())
	if !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Enter of a zero DoubleBarrier = %v, %v; want task.ErrInvalidArgument; the root has %v", p, err, w.Children("/"))
	}
	if p != nil {
		_, _ = sim.Run(w, 0, p.Leave())
	}
}

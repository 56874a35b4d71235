package executor_test

import (
	"context"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// gateParker is a park.Parker that holds the blocking call until the test
// opens the gate, as a simulation holds an actor until it hands it the
// turn: by then the select it is about to enter may find more than one
// case ready.
type gateParker struct {
	parked chan struct{} // a Wait has begun
	gate   chan struct{} // closed by the test: the Wait returns
}

func (p *gateParker) Wait(func() bool) {
	p.parked <- struct{}{}
	<-p.gate
}

func (p *gateParker) Go(f func(park.Parker)) { go f(p) }

// Await's doc: "Await submits t and waits for its outcome or for ctx to
// end. When ctx ends first, the flow is canceled (its cleanups run on the
// executor) and Await returns task.ErrCanceled".
//
// Schedule: the caller of Await is parked (as fakezk/sim parks its
// actors); the flow runs and succeeds, its outcome is in; only then does
// ctx end, and the caller gets the turn. The outcome came first, so Await
// must return it; but its select sees both cases ready and picks one at
// random, so about half the time the caller is told the flow was canceled
// after it did its work (a create made, a lock taken), and a seeded
// simulation's history depends on the Go runtime's choice.
func TestAdv6AwaitOutcomeBeforeCtxEndReportedCanceled(t *testing.T) {
	r := rig.New(t)
	for i := range 40 {
		p := &gateParker{parked: make(chan struct{}), gate: make(chan struct{})}
		ctx, cancel := context.WithCancel(park.NewContext(context.Background(), p))
		type res struct {
			v   int
			err error
		}
		out := make(chan res, 1)
		go func() {
			v, err := executor.Await(ctx, r.Ex, task.Value(7))
			out <- res{v, err}
		}()
		<-p.parked // the flow is submitted and Await is about to wait
		r.Idle()   // the flow runs: its outcome is in
		cancel()   // then ctx ends
		close(p.gate)
		got := <-out
		if got.err != nil || got.v != 7 {
			t.Fatalf("round %d: Await = (%d, %v) for a flow that had succeeded before ctx ended, want (7, <nil>)", i, got.v, got.err)
		}
	}
}

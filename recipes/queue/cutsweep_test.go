package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// Every write a take and its ack send, cut off with its reply lost
// (applied), the session back through a member that has not applied it,
// the call's deadline passing meanwhile: the outcome each call reports
// is true. A take that failed with its deadline took nothing (the item
// is there for another consumer, in either mode, once the client is back);
// an at-most-once take whose delete's outcome is unknown says so
// (UnknownTakeError); an ack
// that succeeded acknowledged the item (no one gets it again); and an
// item whose take failed at-least-once is delivered again
// (sim.CutSweep). An at-most-once take that ends at its deadline with its
// delete's outcome unknown reports the item to the executor's error
// report as an *UnknownTakeError (its caller has gone).
func TestCutSweep(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			q, err := queue.New("/q", queue.WithMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			n := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error { return takeAckHistory(w, cut, q, taskFace(q)) }}.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

// The blocking face under the same sweep: a Client's Take and Ack run in
// an actor whose context ends on the simulated clock while the client is
// cut off, judged as above.
func TestCutSweepBlocking(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			q, err := queue.New("/q", queue.WithMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			n := sim.CutSweep{History: func(w *sim.World, cut *sim.Cutter) error {
				cl, err := queue.NewClient(w.Execs[0], "/q", queue.WithMode(mode))
				if err != nil {
					return err
				}
				return takeAckHistory(w, cut, q, takeAck{
					take: func(w *sim.World, d time.Duration) *sim.Outcome[*queue.Item] {
						return sim.CallIn(w, 0, d, func(_ *sim.Actor, ctx context.Context) (*queue.Item, error) { return cl.Take(ctx) })
					},
					ack: func(w *sim.World, it *queue.Item, d time.Duration) *sim.Outcome[task.Unit] {
						return sim.CallIn(w, 0, d, func(_ *sim.Actor, ctx context.Context) (task.Unit, error) { return task.Unit{}, cl.Ack(ctx, it) })
					},
				})
			}}.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

// takeAck starts client 0's take, and its ack of an item, each ending by
// a deadline.
type takeAck struct {
	take func(w *sim.World, deadline time.Duration) *sim.Outcome[*queue.Item]
	ack  func(w *sim.World, it *queue.Item, deadline time.Duration) *sim.Outcome[task.Unit]
}

// taskFace is takeAck on the task face: Queue.Take and Item.Ack under
// c.Timeout.
func taskFace(q *queue.Queue) takeAck {
	return takeAck{
		take: func(w *sim.World, d time.Duration) *sim.Outcome[*queue.Item] {
			return sim.Submit(w, 0, c.Timeout(q.Take(), d))
		},
		ack: func(w *sim.World, it *queue.Item, d time.Duration) *sim.Outcome[task.Unit] {
			return sim.Submit(w, 0, c.Timeout(it.Ack(), d))
		},
	}
}

func takeAckHistory(w *sim.World, cut *sim.Cutter, q *queue.Queue, ta takeAck) error {
	const deadline = 600 * time.Millisecond
	if _, err := sim.Run(w, 1, q.Put([]byte("x"))); err != nil {
		return err
	}
	cut.Armed = true
	took := ta.take(w, deadline)
	if !w.Settle(func() bool { return took.Done }) {
		return errors.New("client 0's take never ended")
	}
	acked := false
	var ackErr error
	if took.Err == nil {
		if string(took.V.Data) != "x" {
			return fmt.Errorf("client 0 took %q, want x", took.V.Data)
		}
		if q.Mode() == queue.AtLeastOnce {
			ack := ta.ack(w, took.V, deadline)
			if !w.Settle(func() bool { return ack.Done }) {
				return errors.New("client 0's ack never ended")
			}
			acked, ackErr = ack.Err == nil, ack.Err
		} else {
			acked = true
		}
	}
	if !cut.Cut {
		return nil
	}
	// Client 0 comes back, and what its calls left to settle in the
	// background (a give-back, a take's settling) runs.
	healed := w.Clock.Now().Add(2 * w.Timeout())
	w.Settle(func() bool { return !w.Clock.Now().Before(healed) })
	var unknown *queue.UnknownTakeError
	reported := slices.ContainsFunc(w.Errs, func(err error) bool { return errors.As(err, &unknown) })
	// What client 1 takes from now on, up to an item put last.
	if _, err := sim.Run(w, 1, q.Put([]byte("end"))); err != nil {
		return err
	}
	var got []string
	for !slices.Contains(got, "end") {
		it, err := sim.Run(w, 1, c.Timeout(q.Take(), 2*time.Minute))
		if err != nil {
			return fmt.Errorf("client 1's take after %q: %w", got, err)
		}
		got = append(got, string(it.Data))
		if q.Mode() == queue.AtLeastOnce {
			if _, err := sim.Run(w, 1, it.Ack()); err != nil {
				return fmt.Errorf("client 1's ack: %w", err)
			}
		}
	}
	what := fmt.Sprintf("client 0's take: %v; acked: %v (%v); client 1 then took %q", took.Err, acked, ackErr, got)
	switch {
	case acked && slices.Contains(got, "x"):
		return fmt.Errorf("%s: x delivered again after its take (and ack) succeeded", what)
	case took.Err != nil && !errors.As(took.Err, &unknown) && !reported && !slices.Contains(got, "x"):
		return fmt.Errorf("%s: the take failed, yet x is gone and no UnknownTakeError says so", what)
	case q.Mode() == queue.AtLeastOnce && ackErr == nil && !acked && !slices.Contains(got, "x"):
		return fmt.Errorf("%s: x lost", what)
	}
	return nil
}

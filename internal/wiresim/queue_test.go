package wiresim_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/wiresim"
	"github.com/zkflow/zkflow/recipes/queue"
)

const queueDir = "/q"

// queueRun is what the queue scenario knows of one seed: sim.Tasks, and
// for each client whether it put an item since the faults stopped.
type queueRun struct {
	mu      sync.Mutex
	tasks   *sim.Tasks
	pending map[string]bool // put, neither acknowledged nor excused
	// settled: acknowledged or excused; an item can be taken and
	// acknowledged by another client before its Put returns.
	settled  map[string]bool
	putAfter []bool
}

// queueScenario: the at-least-once queue through its blocking face over
// zkadapter. Every client puts items (each with data unique in the seed)
// and takes and acknowledges them, at random; once the faults stop each
// puts one more and then only takes. Judged by the in-memory simulation's
// checker of work queues, sim.Tasks: no item is acknowledged twice
// (checked as it happens) and, once the queue has drained after the
// faults, every item whose Put succeeded was acknowledged, unless an
// acknowledgement of it ended with its outcome unknown (Tasks.Excuse).
func queueScenario() wiresim.Scenario {
	return wiresim.Scenario{
		Name:   "wire-queue",
		Faults: wiresim.AllClasses,
		Setup: func(r *wiresim.Run, ctx context.Context) error {
			r.Value = &queueRun{tasks: sim.NewTasks(), pending: map[string]bool{}, settled: map[string]bool{}, putAfter: make([]bool, len(r.Execs))}
			return createAll(ctx, r, queueDir)
		},
		Client: queueClient,
		Live: func(r *wiresim.Run) bool {
			s := r.Value.(*queueRun)
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, p := range s.putAfter {
				if !p {
					return false
				}
			}
			for _, p := range s.pending {
				if p {
					return false
				}
			}
			return true
		},
		Check: func(r *wiresim.Run) error {
			s := r.Value.(*queueRun)
			s.mu.Lock()
			defer s.mu.Unlock()
			r.Count("acks", s.tasks.Executed())
			return s.tasks.Check()
		},
	}
}

func queueClient(r *wiresim.Run, ctx context.Context, i int) {
	s := r.Value.(*queueRun)
	q, err := queue.NewClient(r.Execs[i], queueDir, queue.WithMode(queue.AtLeastOnce))
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	rnd := r.Rand(i)
	for k := 0; ctx.Err() == nil; {
		s.mu.Lock()
		put := !s.putAfter[i] && (rnd.IntN(2) == 0 || !r.FaultsOn())
		s.mu.Unlock()
		if put {
			id := fmt.Sprintf("c%d-%d", i, k)
			k++
			after := !r.FaultsOn()
			name, err := q.Put(ctx, []byte(id))
			r.Logf("client %d: put %s as %s: %v", i, id, name, err)
			switch {
			case err == nil:
				s.mu.Lock()
				s.tasks.Submit(id)
				s.pending[id] = !s.settled[id]
				s.putAfter[i] = s.putAfter[i] || after
				s.mu.Unlock()
				r.Progress(i)
				r.Count("puts", 1)
			case errors.Is(err, queue.ErrOutcomeUnknown):
				r.Count("puts-unknown", 1)
			case !expected(err):
				r.Errorf("client %d: put %s: %v", i, id, err)
			}
			continue
		}
		// A take that finds the queue empty gives up after a while, so
		// that the client goes on putting.
		tctx, cancel := context.WithTimeout(ctx, time.Duration(20+rnd.IntN(80))*time.Millisecond)
		it, err := q.Take(tctx)
		cancel()
		if err == nil {
			r.Logf("client %d: took %s (%s)", i, it.Data, it.Name)
		} else if !errors.Is(err, context.DeadlineExceeded) {
			r.Logf("client %d: take: %v", i, err)
		}
		if err != nil {
			if !expected(err) {
				r.Errorf("client %d: take: %v", i, err)
			}
			continue
		}
		id := string(it.Data)
		if rnd.IntN(2) == 0 {
			r.Sleep(ctx, time.Duration(rnd.IntN(40))*time.Millisecond) // the work the item asks for
		}
		err = q.Ack(ctx, it)
		r.Logf("client %d: ack %s: %v", i, id, err)
		s.mu.Lock()
		switch {
		case err == nil:
			if err := s.tasks.Execute(i, id); err != nil {
				r.Errorf("client %d: %v", i, err)
			}
			s.settled[id] = true
			delete(s.pending, id)
		case errors.Is(err, queue.ErrDeliveryLost): // not applied: the item comes back
			r.Count("acks-lost", 1)
		default: // the ack may have been applied
			if !expected(err) && !errors.Is(err, queue.ErrOutcomeUnknown) {
				r.Errorf("client %d: ack %s: %v", i, id, err)
			}
			s.tasks.Excuse(id)
			s.settled[id] = true
			delete(s.pending, id)
			r.Count("acks-unknown", 1)
		}
		s.mu.Unlock()
		r.Wake()
	}
}

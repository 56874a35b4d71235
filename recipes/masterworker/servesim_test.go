package masterworker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The masters and workers of the blocking scenario (newBlockingMWScenario):
// each process Serves its one Master or Worker from an actor, with a
// context that ends at a drawn point, and Serves it again a while later,
// as a process whose serving loop was stopped and started again would.

// drained reports whether the masters and workers may stop serving: the
// faults have stopped, the submitters are done, every submission they
// were told of is answered, and no task is left queued or assigned.
func (s *mwSim) drained() bool {
	r := s.r
	if !r.Stopping() || s.subLive > 0 || len(r.Children(simRoot+"/tasks")) > 0 {
		return false
	}
	for _, n := range s.waiting {
		if n > 0 {
			return false
		}
	}
	for _, w := range r.Children(simRoot + "/assign") {
		if len(r.Children(simRoot+"/assign/"+w)) > 0 {
			return false
		}
	}
	return true
}

// serveCtx draws where a Serve's context ends: before the call (one in
// eight), after a number of steps drawn (three in eight: the world may
// end it in an outage it cuts, or inside a job), or after an instant
// drawn within 8 s.
func serveCtx(a *sim.Actor) (context.Context, context.CancelFunc) {
	rnd := a.Rand()
	switch d := rnd.IntN(8); {
	case d == 0:
		ctx, cancel := a.WithCancel(a.Context())
		cancel()
		return ctx, cancel
	case d < 4:
		return a.CancelAfterSteps(a.Context(), rnd.IntN(400))
	}
	return a.WithTimeout(a.Context(), time.Duration(rnd.Int64N(int64(8*time.Second))))
}

// served judges how a Serve of client i ended: with its context's end only
// if that context ended (ended, its error when Serve returned, read before
// the call's cancel), and matching it (task.ErrCanceled for
// context.Canceled, task.ErrDeadlineExceeded for
// context.DeadlineExceeded); otherwise only refused by an ACL (or, for a
// worker, stopped by its handler: stopped). It reports whether the actor
// goes on.
func (s *mwSim) served(a *sim.Actor, what string, ended, err error, stopped bool) bool {
	r, i := s.r, a.Client()
	s.serves++
	switch {
	case r.Closing() || a.Context().Err() != nil:
		return false
	case (errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrSessionExpired)) && stopped:
		s.handlerStops++ // its handler stopped it: served again
	case errors.Is(err, task.ErrCanceled), errors.Is(err, task.ErrDeadlineExceeded):
		s.serveEnds++
		if ended == nil || !errors.Is(err, ended) {
			r.Errorf("client %d: %s Serve returned %v, its context %s", i, what, err, ctxState(ended))
		}
	case errors.Is(err, task.ErrNoAuth):
		s.refused++ // an operator's ACL refused it: served again
	default:
		r.Errorf("client %d: %s Serve: %v", i, what, err)
		return false
	}
	r.Logf("client %d: %s Serve ended: %v", i, what, err)
	_ = a.Sleep(a.Context(), time.Duration(a.Rand().Int64N(int64(time.Second))))
	return true
}

// serveMaster runs master process i: one Master, Served again and again.
func (s *mwSim) serveMaster(i int) {
	m, err := s.sys.Master(fmt.Sprintf("m%d", i))
	if err != nil {
		s.r.Errorf("master: %v", err)
		return
	}
	s.masters[i] = m
	s.r.Go(i, func(a *sim.Actor) {
		for a.Context().Err() == nil && !s.drained() {
			ctx, cancel := serveCtx(a)
			err := m.Serve(ctx, a.Exec())
			ended := ctx.Err()
			cancel()
			if !s.served(a, "master", ended, err, false) {
				break
			}
		}
		s.masterStats(m)
	})
}

// serveWorker runs worker process i: one Worker (its id kept across
// expiries and restarts), Served again and again.
func (s *mwSim) serveWorker(i int) {
	id := fmt.Sprintf("w%d-%d", i, s.workerN[i])
	w, err := s.sys.Worker(id, s.handler(i, id))
	if err != nil {
		s.r.Errorf("worker: %v", err)
		return
	}
	s.workers[i] = w
	s.r.Go(i, func(a *sim.Actor) {
		for a.Context().Err() == nil && !s.drained() {
			ctx, cancel := serveCtx(a)
			err := w.Serve(ctx, a.Exec())
			ended := ctx.Err()
			cancel()
			stopped := s.canceled[i] || s.foreign[i]
			s.canceled[i], s.foreign[i] = false, false
			if !s.served(a, "worker "+id, ended, err, stopped) {
				break
			}
		}
		s.workerDone(w)
	})
}

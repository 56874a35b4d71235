package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

const bsimService = "b"

// blockingSim drives discovery through its Client from actors
// (goroutines the world runs in lockstep): each of 3 clients has one
// Client shared by 3 actors: two that loop register, stay a while,
// unregister (instances "c<i>a<k>"), and one that loops start a cache,
// read a few answers with Next, stop. Each round draws its context: one
// that does not end, one ended before the call, or one that ends after a
// few steps or a drawn time (during the call or later); Unregister and
// Stop take that same context.
//
// Judged by: a call fails only with its context's error, a session's
// end, or an error a retry would settle; once every actor has ended, no
// instance node is left (an Unregister is carried out whatever its
// context, and a Register that failed leaves no node); Registered
// (judgeRegistered): never true on a session older than its executor's.
type blockingSim struct {
	clients    int
	registered int                         // rounds that registered, summed over seeds
	held       [][]*discovery.Registration // by client: what its actors hold registered
	regSeen    int                         // checks at which judgeRegistered found one registered
	expired    int                         // expiries judgeRegistered heard while one was held
}

func newBlockingSim() (*blockingSim, sim.Scenario) {
	s := &blockingSim{clients: 3}
	dir := simBase + "/" + bsimService
	return s, sim.Scenario{
		Name:      "discovery/blocking",
		InJobEnds: true,
		Clients:   s.clients,
		Faults:    sim.Faults{Allow: sim.AllFaults, MaxRate: 0.01},
		Duration:  5 * time.Second,
		Workload: func(r *sim.Trial) {
			s.held = make([][]*discovery.Registration, s.clients)
			for i := range s.clients {
				s.startClient(r, i)
			}
		},
		Restart:  s.startClient,
		Operator: []string{dir + "/"},
		Regressions: []sim.Regression{
			{Seed: 251552718802605, Why: "liveness (the test's own): a follower's Next waited with a context that never ends after the registering actors had stopped; reads are now bounded"},
		},
		Quiesce: func(r *sim.Trial) bool {
			return r.Actors() == 0 && len(r.Children(dir)) == 0
		},
		Invariants: []sim.Invariant{sim.InvariantFunc(func(r *sim.Trial) error {
			for i := range s.held {
				if err := s.registeredOnCurrent(r, i); err != nil {
					return err
				}
			}
			return nil
		})},
	}
}

// judgeRegistered judges what Registration.Registered promises for a
// dynamic instance (false from an expiry until it is registered again on
// the new session) for those client i's actors hold. Subscribed when the
// client starts, before any registration, it hears each session event
// before they do, so it judges the state the events before left: at
// every event but an expiry (at which the executor has begun the new
// session and the registrations have not heard it yet), and at the end
// of the seed, a registered instance's session is its executor's current
// one.
func (s *blockingSim) judgeRegistered(r *sim.Trial, i int) {
	ex := r.Execs[i]
	ex.Subscribe(func(ev task.Event) {
		if ev.Type != task.EventNone || ev.State == task.StateClosed || r.Execs[i] != ex {
			return // (the process's end: its registrations end with it)
		}
		if ev.State == task.StateExpired {
			if len(s.held[i]) > 0 {
				s.expired++
			}
			return
		}
		if err := s.registeredOnCurrent(r, i); err != nil {
			r.Errorf("at %v: %v", ev.State, err)
		}
	})
}

// registeredOnCurrent checks that every registration client i's actors
// hold that says it is registered is registered on its executor's
// current session.
func (s *blockingSim) registeredOnCurrent(r *sim.Trial, i int) error {
	cur := r.Execs[i].SessionScope().Session()
	for _, reg := range s.held[i] {
		if closed(reg.Done()) || !reg.Registered() {
			continue
		}
		if got, ok := discovery.RegistrationSession(reg); ok && got.Epoch != cur.Epoch {
			return fmt.Errorf("client %d: %s Registered() true on session %d (%#x), its executor on session %d since", i, reg.Path(), got.Epoch, got.ID, cur.Epoch)
		}
		s.regSeen++
	}
	return nil
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// startClient gives client i (its process now) a Client and its actors.
func (s *blockingSim) startClient(r *sim.Trial, i int) {
	c, err := discovery.NewClient(r.Execs[i], simBase)
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	s.held[i] = nil // the registrations of the process before (its executor closed) ended with it
	s.judgeRegistered(r, i)
	for k := range 2 {
		id := fmt.Sprintf("c%da%d", i, k)
		r.Go(i, func(a *sim.Actor) {
			for !r.Stopping() && a.Context().Err() == nil {
				s.register(r, a, c, id)
			}
		})
	}
	r.Go(i, func(a *sim.Actor) {
		for !r.Stopping() && a.Context().Err() == nil {
			s.follow(r, a, c)
		}
	})
}

// roundCtx draws a round's context; ends reports whether it may end.
func roundCtx(a *sim.Actor) (ctx context.Context, cancel context.CancelFunc, ends bool) {
	rnd := a.Rand()
	ctx, cancel = a.WithCancel(a.Context())
	switch rnd.IntN(4) {
	case 0:
		return ctx, cancel, false
	case 1:
		cancel()
	case 2:
		var c2 context.CancelFunc
		ctx, c2 = a.CancelAfterSteps(ctx, rnd.IntN(12))
		c1 := cancel
		cancel = func() { c2(); c1() }
	default:
		var c2 context.CancelFunc
		ctx, c2 = a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(3*time.Second))))
		c1 := cancel
		cancel = func() { c2(); c1() }
	}
	return ctx, cancel, true
}

// expected reports whether err is one a blocking call may return.
func expected(r *sim.Trial, a *sim.Actor, ends bool, err error) bool {
	switch {
	case errors.Is(err, task.ErrCanceled), errors.Is(err, task.ErrDeadlineExceeded):
		return ends || a.Context().Err() != nil
	case r.Closing(), errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed), task.IsRetryable(err):
		return true
	}
	return false
}

// register is one register, stay, unregister of actor a as instance id.
func (s *blockingSim) register(r *sim.Trial, a *sim.Actor, c *discovery.Client, id string) {
	i, rnd := a.Client(), a.Rand()
	ctx, cancel, ends := roundCtx(a)
	defer cancel()
	inc := r.Incarnation(i)
	reg, err := c.Register(ctx, discovery.Instance{Name: bsimService, ID: id, Port: 80})
	if err != nil {
		if !expected(r, a, ends, err) {
			r.Errorf("client %d: register %s: %v", i, id, err)
		}
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return
	}
	s.registered++
	if r.Incarnation(i) == inc { // (an actor of a process that crashed as it registered is not judged)
		s.held[i] = append(s.held[i], reg)
	}
	_ = a.Sleep(ctx, time.Duration(rnd.Int64N(int64(time.Second))))
	err = c.Unregister(ctx, reg)
	if r.Incarnation(i) == inc {
		s.held[i] = slices.DeleteFunc(s.held[i], func(h *discovery.Registration) bool { return h == reg })
	}
	if err != nil && !expected(r, a, ends, err) {
		r.Errorf("client %d: unregister %s: %v", i, id, err)
	}
	if err == nil {
		r.Progress(i) // a whole round: liveness once the faults stop
	}
}

// follow is one cache started, read a few times, stopped.
func (s *blockingSim) follow(r *sim.Trial, a *sim.Actor, c *discovery.Client) {
	i, rnd := a.Client(), a.Rand()
	ctx, cancel, ends := roundCtx(a)
	defer cancel()
	sc, err := c.StartCache(ctx, bsimService)
	if err != nil {
		if !expected(r, a, ends, err) {
			r.Errorf("client %d: start cache: %v", i, err)
		}
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return
	}
	for range rnd.IntN(4) {
		// Each read waits at most 2s: once the registering actors have
		// stopped, nothing changes any more.
		nctx, ncancel := a.WithTimeout(ctx, 2*time.Second)
		_, err := sc.Next(nctx)
		ncancel()
		if err != nil {
			if !expected(r, a, true, err) {
				r.Errorf("client %d: cache next: %v", i, err)
			}
			break
		}
	}
	if err := sc.Stop(ctx); err != nil && !expected(r, a, ends, err) {
		r.Errorf("client %d: stop cache: %v", i, err)
	}
}

// The seeds that ever failed, replayed in every plain go test.
func TestSimRegressions(t *testing.T) {
	_, bs := newBlockingSim()
	sim.Regressions(t, bs)
}

func TestBlockingSimulation(t *testing.T) {
	s, sc := newBlockingSim()
	st := sim.Check(t, sc, simSeeds()/2)
	t.Logf("%d rounds registered; Registered judged true %d times, %d expiries heard with registrations held", s.registered, s.regSeen, s.expired)
	if st.Failures() == 0 && (s.registered == 0 || s.regSeen == 0 || s.expired == 0) {
		t.Fatal("no round registered, or Registered never judged at an expiry: the test checks nothing")
	}
}

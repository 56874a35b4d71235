package discovery_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// simSeeds is the number of seeds the simulation runs (fewer with -short;
// -sim.seeds and -sim.seed override it).
func simSeeds() int {
	if testing.Short() {
		return 30
	}
	return 100 // make sim explores thousands (TestSimExplore)
}

const (
	simBase    = "/svc"
	simService = "web"
	simDir     = simBase + "/" + simService
)

// discoverySim is the discovery scenario: 4 clients, each registering
// the instance "i<k>" of one service and following the service with a
// Cache, under the faults the seed draws (every class but wipe, and but
// the counter classes, which need sequential nodes: crash and restart
// with the same identity, operator deletes and re-creations of instance
// nodes, pauses, expiries, connection drops with requests applied or not,
// partitions, delays, server restarts, clock jumps), with
// create replies lost on top. Client 0's instance stays registered
// (through expiries: it registers again on each new session); the others
// register and unregister in a loop. Judged by:
//
//   - every answer of every cache's Next lists instances of the service,
//     sorted, each with the id of its node;
//   - once the faults stop and every client is registered for good, every
//     instance node is owned by its client's current session (no instance
//     of a session that ended is left) and holds the instance as its
//     Registration has it, and every cache lists exactly the
//     server's instances, with their data;
//   - then every client unregisters, and every cache converges to none,
//     with no instance node left on the server;
//   - no cache ends with an error;
//   - from the server's journal (sim.Scenario.OwnDeletes), an instance
//     node is deleted only by its own session (its Unregister, its end),
//     the server or the operator, never by another client's session.
type discoverySim struct {
	clients int
	lost    sim.LostReplies
	cnt     sim.Counts
	// summed over seeds
	answers, reregistered int
	refused               int // registrations, unregistrations and caches an operator's ACL refused

	d      *discovery.Discovery
	caches []*discovery.Cache
	regs   []*discovery.Registration
	final  int    // clients registered for good
	joined []bool // client i counted in final
	epoch0 uint64 // the session epoch client 0 registered on
}

func newDiscoverySim() (*discoverySim, sim.Scenario) {
	s := &discoverySim{clients: 4}
	s.lost = sim.LostReplies{Rate: 0.1, Counts: &s.cnt}
	return s, sim.Scenario{
		Name:    "discovery",
		Clients: s.clients,
		// The acl class on the service's directory and its instance
		// nodes: a registration, an unregistration's delete or a
		// cache's read refused for a while.
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.Of(sim.ACL)},
		ACL:      []string{simDir},
		Duration: 15 * time.Second,
		Wrap:     s.lost.Wrap,
		Setup: func(r *sim.Trial) error {
			s.lost.World, s.lost.Rand = r.World, r.Rand
			d, err := discovery.New(simBase)
			s.d = d
			s.caches = make([]*discovery.Cache, s.clients)
			s.regs = make([]*discovery.Registration, s.clients)
			s.final, s.joined = 0, make([]bool, s.clients)
			return err
		},
		Restart: func(r *sim.Trial, i int) {
			// The dead process's registration, cache and loop went with it.
			if s.joined[i] {
				s.final--
				s.joined[i] = false
			}
			s.regs[i], s.caches[i] = nil, nil
			s.follow(r, i)
			s.churn(r, i)
		},
		Operator: []string{simDir + "/"},
		// A client deletes only its own instance node (Unregister,
		// through its member: the node its session registered), never
		// one of another session: the crashed process's, alive until
		// its session expires, which the new process's Register waits
		// out (PROTOCOL.md, Faults).
		OwnDeletes: []string{simDir},
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.follow(r, i)
				s.churn(r, i)
			}
		},
		Live: func(r *sim.Trial) bool {
			for i := 1; i < s.clients; i++ {
				if !r.ProgressedSinceFaults(i) {
					return false
				}
			}
			return true
		},
		Quiesce: s.quiesce,
		Invariants: []sim.Invariant{
			sim.InvariantFunc(s.unregisterAll),
			// ErrNoAuth: a delete an operator's ACL refused reports the
			// refusal and goes on in the background until the ACL lets
			// it (zkops.KeepDeleting); unregisterAll judges that no
			// instance node is left.
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}
}

func instanceOf(i int) discovery.Instance {
	return discovery.Instance{Name: simService, ID: fmt.Sprintf("i%d", i), Address: fmt.Sprintf("10.0.0.%d", i), Port: 8000 + i}
}

// follow starts client i's cache, then reads it with Next until it ends,
// checking each answer.
func (s *discoverySim) follow(r *sim.Trial, i int) {
	ex := r.Execs[i]
	c, err := s.d.NewCache(simService)
	if err != nil {
		r.Errorf("client %d: NewCache: %v", i, err)
		return
	}
	var read func()
	read = func() {
		executor.Submit(ex, c.Next(), func(ins []discovery.Instance, err error) {
			if err != nil && errors.Is(c.Err(), task.ErrNoAuth) && s.caches[i] == c && !r.Closing() {
				// A read an operator's ACL refused ended the cache
				// (recipes/cache: it owes nothing of a node it may not
				// read): follow the service with a new one.
				s.refused++
				s.caches[i] = nil
				s.follow(r, i)
				return
			}
			if err != nil || r.Closing() {
				return // stopped, or the process ended; quiesce judges the cache
			}
			s.answers++
			if !slices.IsSortedFunc(ins, func(a, b discovery.Instance) int { return compare(a.ID, b.ID) }) {
				r.Errorf("client %d: cache answered unsorted %v", i, ids(ins))
			}
			for _, in := range ins {
				if in.Name != simService || len(in.ID) != 2 || in.ID[0] != 'i' {
					r.Errorf("client %d: cache answered %+v", i, in)
				}
			}
			read()
		})
	}
	executor.Submit(ex, c.Start(), func(_ *discovery.Cache, err error) {
		switch {
		case r.Closing():
		case err == nil:
			s.caches[i] = c
			read()
		case errors.Is(err, task.ErrNoAuth):
			// An operator's ACL refused the first read: start again a
			// while later.
			s.refused++
			sim.After(r, ex, draw(r, time.Second), func() { s.follow(r, i) })
		default: // session expired before the first snapshot: start again
			s.cnt.Expiries++
			s.follow(r, i)
		}
	})
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// churn is client i's loop: register, stay a while, unregister, pause;
// once the run is stopping, register for good.
func (s *discoverySim) churn(r *sim.Trial, i int) {
	ex := r.Execs[i]
	var register func(k func(*discovery.Registration))
	register = func(k func(*discovery.Registration)) {
		sim.Across(r, ex, s.d.Register(instanceOf(i)), &s.cnt, func(reg *discovery.Registration, err error) {
			if errors.Is(err, task.ErrNoAuth) {
				// An operator's ACL refused the registration for a
				// while (a Register that fails leaves no node): try
				// again.
				s.refused++
				sim.After(r, ex, draw(r, time.Second), func() { register(k) })
				return
			}
			if err != nil {
				r.Errorf("client %d: register: %v", i, err)
				return
			}
			s.regs[i] = reg
			k(reg)
		})
	}
	if r.Stopping() || i == 0 {
		register(func(*discovery.Registration) {
			s.final++
			s.joined[i] = true
			if i == 0 {
				s.epoch0 = r.Execs[0].SessionScope().Session().Epoch
			}
		})
		return
	}
	sim.After(r, ex, draw(r, 3*time.Second), func() {
		register(func(reg *discovery.Registration) {
			sim.After(r, ex, draw(r, 4*time.Second), func() {
				sim.Across(r, ex, reg.Unregister(), &s.cnt, func(_ task.Unit, err error) {
					if err != nil && !s.refusedUnregister(err) {
						r.Errorf("client %d: unregister: %v", i, err)
						return
					}
					s.regs[i] = nil
					r.Progress(i)
					s.churn(r, i)
				})
			})
		})
	})
}

// refusedUnregister reports whether err is an Unregister's delete an
// operator's ACL refused: the delete goes on in the background until the
// ACL lets it (zkops.KeepDeleting); the quiescence and unregisterAll
// judge the nodes.
func (s *discoverySim) refusedUnregister(err error) bool {
	if !errors.Is(err, task.ErrNoAuth) {
		return false
	}
	s.refused++
	return true
}

// reregister unregisters reg, client i's registration for good that a
// refusal ended, and registers again for good.
func (s *discoverySim) reregister(r *sim.Trial, i int, reg *discovery.Registration) {
	s.refused++
	s.final--
	s.joined[i] = false
	s.regs[i] = nil
	sim.Across(r, r.Execs[i], reg.Unregister(), &s.cnt, func(_ task.Unit, err error) {
		if err != nil && !s.refusedUnregister(err) {
			r.Errorf("client %d: unregister of a registration a refusal ended: %v", i, err)
			return
		}
		s.churn(r, i)
	})
}

func draw(r *sim.Trial, max time.Duration) time.Duration {
	return time.Duration(r.Rand.Int64N(int64(max)))
}

// quiesce is the end of the run: every client registered for good on its
// current session, and every cache agreeing with the server.
func (s *discoverySim) quiesce(r *sim.Trial) bool {
	for i, c := range s.caches {
		if c != nil && errors.Is(c.Err(), task.ErrNoAuth) {
			// A read an operator's ACL refused ended the cache, and no
			// Next was waiting to hear it (the read loop stops at an
			// expiry): follow the service with a new one.
			s.refused++
			s.caches[i] = nil
			s.follow(r, i)
			continue
		}
		if c != nil && c.Err() != nil {
			r.Errorf("client %d: cache ended: %v", i, c.Err())
			return false
		}
	}
	if s.final < s.clients {
		return false
	}
	for i, reg := range s.regs {
		if errors.Is(reg.Err(), task.ErrNoAuth) {
			// A registration an operator's ACL refused ended it (the
			// member behind it, recipes/group): unregister, and
			// register again for good.
			s.reregister(r, i, reg)
			return false
		}
		data, st, ok := r.NodeData(reg.Path())
		if !ok || st.EphemeralOwner != r.Conns[i].SessionID() || !reg.Registered() {
			return false
		}
		// The node holds the instance as registered, registered again
		// after an expiry or an operator's delete included.
		if in, err := discovery.ParseInstance(data); err != nil || !reflect.DeepEqual(in, reg.Instance()) {
			r.Errorf("client %d: %s holds %q (%v), registered as %+v", i, reg.Path(), data, err, reg.Instance())
			return false
		}
	}
	// Every instance node is a registration of a live session, so a cache
	// equal to the server lists no instance of a session that ended.
	if len(r.Children(simDir)) != s.clients || !s.converged(r) {
		return false
	}
	s.reregistered += int(r.Execs[0].SessionScope().Session().Epoch - s.epoch0)
	return true
}

// converged reports whether every cache lists exactly the server's
// instances, each equal in every field to what its node holds.
func (s *discoverySim) converged(r *sim.Trial) bool {
	for _, c := range s.caches {
		if c == nil {
			return false
		}
		got := c.Instances()
		names := r.Children(simDir)
		slices.Sort(names)
		if !slices.Equal(ids(got), names) {
			return false
		}
		for _, in := range got {
			data, _, ok := r.NodeData(simDir + "/" + in.ID)
			want, err := discovery.ParseInstance(data)
			if !ok || err != nil || !reflect.DeepEqual(want, in) {
				return false
			}
		}
	}
	return true
}

// unregisterAll is the last check: every client unregisters, and every
// cache converges to none, with no instance node left.
func (s *discoverySim) unregisterAll(r *sim.Trial) error {
	left := 0
	for i, reg := range s.regs {
		sim.Across(r, r.Execs[i], reg.Unregister(), &s.cnt, func(_ task.Unit, err error) {
			// ErrNoAuth: an ACL the operator has not put back yet
			// refused the delete, which goes on in the background; the
			// caches and the server are judged below.
			if err != nil && !errors.Is(err, task.ErrNoAuth) {
				r.Errorf("client %d: final unregister: %v", i, err)
			}
			left++
		})
	}
	if !r.Settle(func() bool { return r.Failed() || left == s.clients && s.converged(r) }) || r.Failed() {
		views := make([][]string, len(s.caches))
		for i, c := range s.caches {
			views[i] = ids(c.Instances())
		}
		return fmt.Errorf("after every instance unregistered: %d of %d done, server has %v, caches have %v",
			left, s.clients, r.Children(simDir), views)
	}
	if n := len(r.Children(simDir)); n != 0 {
		return fmt.Errorf("instance nodes left: %v", r.Children(simDir))
	}
	return nil
}

func TestDiscoverySimulation(t *testing.T) {
	s, sc := newDiscoverySim()
	st := sim.Check(t, sc, simSeeds())
	t.Logf("%d cache answers, %d connection-loss responses, %d caches started again after expiry, %d registrations of the staying instance on a new session, %d refusals by an ACL",
		s.answers, s.cnt.Losses, s.cnt.Expiries, s.reregistered, s.refused)
	if st.Failures() == 0 && (s.answers == 0 || s.cnt.Losses == 0 || s.reregistered == 0) {
		t.Fatal("no cache answered, or the faults never bit: the test checks nothing")
	}
}

// The same seed replays the same history, so a failing seed printed by
// sim.Check replays; both scenarios, this one and the blocking face's
// (blocking_sim_test.go).
func TestSimDeterminism(t *testing.T) {
	_, sc := newDiscoverySim()
	sim.Determinism(t, sc, sim.Sample(10, 500))
	_, bs := newBlockingSim()
	sim.Determinism(t, bs, sim.Sample(10, 500))
}

// The large run of make sim: SIM_SEEDS seeds of each scenario (skipped
// when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newDiscoverySim()
	_, bs := newBlockingSim()
	sim.Explore(t, sc, bs)
}

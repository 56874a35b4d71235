package barrier_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// dropCreate is the chance that a create's reply is lost (the connection
// drops just after it is sent, the create applied or not), on top of the
// faults the seed draws.
const dropCreate = 0.1

// simSeeds is the number of seeds each simulation runs (fewer with -short;
// -sim.seeds and -sim.seed override it).
func simSeeds() int {
	if testing.Short() {
		return 50
	}
	return 300
}

// doubleSim is the double-barrier scenario: rounds of a double barrier
// for n of 4 clients, each round in a directory of its own. Each client
// arrives after a drawn delay, enters, works for a drawn time, leaves, and
// goes on to the next round; a flow that fails with session expiry runs
// again on the next session. Judged by:
//
//   - when anyone passes Enter, at least n distinct client processes
//     (a client and its process after a crash count as two: the dead
//     one's node counts until its session expires) have started
//     Enter in that round, n sessions have had a participant node in
//     the round's directory at once (barrier.Presence, from the server's
//     journal), and no session has two participant nodes (one
//     participant never counts twice);
//   - when anyone returns from Leave, every participant node made before
//     that Leave started is gone from the server (each of them has left,
//     or its session has ended): those that had passed Enter, and those
//     still entering;
//   - once the faults stop every client finishes every round, then no
//     participant node is left on the server, and no cleanup failed but
//     by the end of its session.
type doubleSim struct {
	clients, n, rounds int
	lost               sim.LostReplies
	cnt                sim.Counts
	entered, left      int // summed over seeds
	entering           int // participant nodes not among those that passed Enter, as a Leave started
	refusedEnters      int // Enters an ACL refused (summed over seeds)
	refusedLeaves      int // Leaves an ACL refused

	rs       []*doubleRound
	at       []int // the round each client is in
	finished int
	present  barrier.Presence
}

type doubleRound struct {
	d       *barrier.DoubleBarrier
	started map[[2]int]bool // client, incarnation
	passed  []string        // nodes of the participants that passed Enter
}

func newDoubleSim() (*doubleSim, sim.Scenario) {
	s := &doubleSim{clients: 4, n: 3, rounds: 3}
	s.lost = sim.LostReplies{Rate: dropCreate, Counts: &s.cnt}
	return s, sim.Scenario{
		Name:       "double-barrier",
		LagWatched: true,
		Clients:    s.clients,
		Server:     fakezk.Config{Journal: s.present.Journal},
		// The acl class on the rounds' directories and everything below:
		// an Enter or a Leave refused for a while, and no participant
		// counted twice, nor a node left behind, once the ACL is back.
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.05},
		ACL:      []string{"/db/r0", "/db/r1", "/db/r2"},
		Duration: 20 * time.Second,
		Wrap:     s.lost.Wrap,
		Setup:    s.setup,
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.play(r, i, 0)
			}
		},
		Restart: func(r *sim.Trial, i int) {
			if s.at[i] < s.rounds {
				s.play(r, i, s.at[i])
			}
		},
		Operator:   []string{"/db/r0/_p_", "/db/r1/_p_", "/db/r2/_p_"},
		OwnDeletes: []string{"/db/r0", "/db/r1", "/db/r2"},
		// A participant node created again under its exact name (a
		// 128-bit prefix of its own) is a forgery the barrier counts in
		// the participant's place (doc, Operators); the simulation's
		// operator only deletes them. The directed tests of
		// operator_test.go cover the forged copies.
		OperatorDeleteOnly: []string{"/db/r0/_p_", "/db/r1/_p_", "/db/r2/_p_"},
		Counters:           []string{"/db/r0", "/db/r1", "/db/r2"},
		Regressions: []sim.Regression{
			{Seed: 825, NoACL: true, Why: "liveness: the operator deleted the nodes of all three participants waiting in Enter; they watched only the ready node"},
			{Seed: 1000000201, NoACL: true, Why: "liveness: as seed 825"},
			// Found with a first fix of 825, in which a participant whose
			// node was replaced failed and entered again.
			{Seed: 93, NoACL: true, Why: "safety: a participant whose node the operator deleted and created again entered again, counted twice"},
			{Seed: 242, NoACL: true, NoRestartLag: true, Why: "safety: a create's reply lost while the operator created the node again: created once more, counted twice"},
			{Seed: 1000000072, NoACL: true, Why: "safety: as seed 242, the copy a persistent node"},
		},
		Live: func(*sim.Trial) bool { return s.finished == s.clients },
		Quiesce: func(r *sim.Trial) bool {
			for _, rd := range s.rs {
				if len(participantNodes(r.World, rd.d.Dir())) > 0 {
					return false
				}
			}
			return true
		},
		// A Leave's cleanup (Scope.Defer) whose delete an operator's ACL
		// refused reports the refusal and goes on in the background until
		// the ACL lets it (zkops.KeepDeleting): the doc promises the node
		// deleted, not a cleanup without a report. Quiesce sees that it
		// is: no participant node left.
		// No session ever has two participant nodes in a round at once,
		// judged at every transaction (Presence.Twice), not only at the
		// passes: the workload enters again only once the session's
		// node is gone.
		Invariants: []sim.Invariant{sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth), sim.InvariantFunc(func(*sim.Trial) error {
			if t := s.present.Twice(); t != "" {
				return fmt.Errorf("one participant counted twice: %s", t)
			}
			return nil
		})},
	}
}

func (s *doubleSim) setup(r *sim.Trial) error {
	s.lost.World, s.lost.Rand = r.World, r.Rand
	s.finished = 0
	s.at = make([]int, s.clients)
	s.rs = make([]*doubleRound, s.rounds)
	var dirs []string
	for i := range s.rs {
		d, err := barrier.NewDouble(fmt.Sprintf("/db/r%d", i), s.n)
		if err != nil {
			return err
		}
		s.rs[i] = &doubleRound{d: d, started: map[[2]int]bool{}}
		dirs = append(dirs, d.Dir())
	}
	s.present.Reset(r.World, dirs)
	return nil
}

// enterAgain has client i, whose Enter of round an ACL refused, enter
// the round again once no participant node of its session is left in
// the round's directory. The task face does not wait for the cleanup of
// a failed Enter (only a DoubleClient's next Enter does, doc): a caller
// that enters again before its node is gone has two nodes of one
// session counted, so the workload waits for it, reading the server
// once a second, as a caller of the task face must.
func (s *doubleSim) enterAgain(r *sim.Trial, i, round int) {
	ex, rd := r.Execs[i], s.rs[round]
	sim.After(r, ex, time.Second, func() {
		if ex != r.Execs[i] {
			return // the process crashed: Restart plays on
		}
		sess, _ := ex.Current()
		for _, name := range participantNodes(r.World, rd.d.Dir()) {
			if st, ok := r.NodeStat(rd.d.Dir() + "/" + name); ok && st.EphemeralOwner == sess.ID {
				s.enterAgain(r, i, round)
				return
			}
		}
		s.play(r, i, round)
	})
}

func (s *doubleSim) play(r *sim.Trial, i, round int) {
	s.at[i] = round
	if round == s.rounds {
		s.finished++
		return
	}
	ex, rd := r.Execs[i], s.rs[round]
	sim.After(r, ex, draw(r.Rand, 8*time.Second), func() {
		rd.started[[2]int{i, r.Incarnation(i)}] = true
		sim.Across(r, ex, rd.d.Enter(), &s.cnt, func(p *barrier.Participant, err error) {
			if errors.Is(err, barrier.ErrParticipantLost) {
				// The operator deleted its node: it enters again.
				r.Logf("client %d round %d: %v", i, round, err)
				s.play(r, i, round)
				return
			}
			if errors.Is(err, task.ErrNoAuth) {
				// An operator's ACL refuses the entry for a while (doc:
				// an *OpError a retry cannot settle). Its node, if made,
				// goes once the ACL lets it (a failed Enter leaves no
				// participant node); it enters again once that node is
				// gone (enterAgain).
				r.Logf("client %d round %d: %v", i, round, err)
				s.refusedEnters++
				s.enterAgain(r, i, round)
				return
			}
			if err != nil {
				r.Errorf("client %d round %d: enter: %v", i, round, err)
				return
			}
			s.entered++
			if len(rd.started) < s.n {
				r.Errorf("client %d passed Enter of round %d when only %d of %d had arrived", i, round, len(rd.started), s.n)
			}
			if m := s.present.Most(round); m < s.n {
				r.Errorf("client %d passed Enter of round %d when at most %d of %d participant nodes were ever there at once", i, round, m, s.n)
			}
			if !s.present.Made(p.Path()) {
				r.Errorf("client %d passed Enter of round %d as %s, a node never made", i, round, p.Path())
			}
			owners := map[int64]string{}
			for _, name := range participantNodes(r.World, rd.d.Dir()) {
				path := rd.d.Dir() + "/" + name
				st, ok := r.NodeStat(path)
				if !ok || st.EphemeralOwner == 0 || r.OperatorSession(st.EphemeralOwner) {
					continue // the operator's nodes are no participant's
				}
				if other, dup := owners[st.EphemeralOwner]; dup {
					r.Errorf("round %d: session %#x has two participant nodes, %s and %s: it counts twice", round, st.EphemeralOwner, other, path)
				}
				owners[st.EphemeralOwner] = path
			}
			rd.passed = append(rd.passed, p.Path())
			r.Logf("client %d entered round %d as %s", i, round, p.Path())
			bar := r.OpenSpan(i, "barrier", "round "+strconv.Itoa(round)) // inside, on the seed's picture
			var leave func()
			leave = func() {
				before := append([]string(nil), rd.passed...)
				since := r.Server.Zxid() // the nodes made up to here must be gone
				for _, name := range participantNodes(r.World, rd.d.Dir()) {
					if !slices.Contains(before, rd.d.Dir()+"/"+name) {
						s.entering++ // a node whose participant has not passed Enter (or has left, or crashed)
					}
				}
				sim.Across(r, ex, p.Leave(), &s.cnt, func(_ task.Unit, err error) {
					if errors.Is(err, task.ErrNoAuth) {
						// An operator's ACL refuses the Leave for a
						// while: its node is deleted all the same once
						// the ACL lets it (the doc: a cleanup still
						// deletes it), and Leave may be run again after
						// a failure: it is, until it returns, judged
						// as any Leave.
						r.Logf("client %d round %d: leave: %v", i, round, err)
						s.refusedLeaves++
						sim.After(r, ex, time.Second, func() {
							if ex == r.Execs[i] {
								leave()
							}
						})
						return
					}
					if err != nil {
						r.Errorf("client %d round %d: leave: %v", i, round, err)
						return
					}
					s.left++
					r.CloseSpan(bar)
					for _, path := range before {
						if _, ok := r.NodeStat(path); ok {
							r.Errorf("client %d finished Leave of round %d while participant %s, which had passed Enter, is still there", i, round, path)
						}
					}
					for _, name := range participantNodes(r.World, rd.d.Dir()) {
						st, ok := r.NodeStat(rd.d.Dir() + "/" + name)
						if !ok || st.EphemeralOwner == 0 || r.OperatorSession(st.EphemeralOwner) || st.Czxid > since {
							continue // the operator's nodes are no participant's; one made since may stay
						}
						r.Errorf("client %d finished Leave of round %d while participant node %s, made before that Leave started (zxid %#x, Leave at %#x), is still there", i, round, name, st.Czxid, since)
					}
					r.Logf("client %d left round %d", i, round)
					r.Progress(i)
					s.play(r, i, round+1)
				})
			}
			sim.After(r, ex, draw(r.Rand, 3*time.Second), leave)
		})
	})
}

// barrierSim is the barrier scenario: client 0 sets a barrier, changes
// its data a few times (each change wakes every waiter's watch) and
// removes it; clients 1-3 wait for it, starting at drawn times; then the
// next round, on a node of its own. Judged by: whenever a Wait returns,
// the barrier node is not on the server (in a round it is never set again
// after its removal, but by the operator); once the faults stop, every
// round ends. A client process that crashes takes up its part of the
// current round again (the controller from Set, which is idempotent; a
// waiter its Wait); the operator deletes and re-creates barrier nodes.
type barrierSim struct {
	clients, rounds, updates int
	lost                     sim.LostReplies
	cnt                      sim.Counts
	held, passed             int // summed over seeds
	refused                  int // calls an ACL refused
	finished                 bool
	cur                      *barrierRound
}

// barrierRound is one round's state, kept so a restarted process can take
// up its part.
type barrierRound struct {
	b                *barrier.Barrier
	round            int
	waiting          int
	removed, started bool // the barrier removed; the waiters started
	passed           map[int]bool
	control          func()      // the controller's part, from Set
	wait             func(i int) // waiter i's part
}

func newBarrierSim() (*barrierSim, sim.Scenario) {
	s := &barrierSim{clients: 4, rounds: 3, updates: 3}
	s.lost = sim.LostReplies{Rate: dropCreate, Counts: &s.cnt}
	return s, sim.Scenario{
		Name:       "barrier",
		LagWatched: true,
		Clients:    s.clients,
		// The acl class on /b and every barrier node below it: a Set, a
		// Wait, an update or a Remove refused for a while.
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.Of(sim.ACL), MaxRate: 0.05},
		ACL:      []string{"/b"},
		Duration: 20 * time.Second,
		Wrap:     s.lost.Wrap,
		Setup: func(r *sim.Trial) error {
			s.lost.World, s.lost.Rand = r.World, r.Rand
			s.finished, s.cur = false, nil
			return nil
		},
		Workload: func(r *sim.Trial) { s.round(r, 0) },
		Restart: func(r *sim.Trial, i int) {
			rd := s.cur
			switch {
			case rd == nil || s.finished:
			case i == 0 && !rd.removed:
				rd.control()
			case i > 0 && rd.started && !rd.passed[i]:
				rd.wait(i)
			}
		},
		Operator:   []string{"/b"},
		OwnDeletes: []string{"/b"},
		Regressions: []sim.Regression{
			{Seed: 5500196, NoACL: true, Why: "judge: a wait that began while an operator had lifted the barrier passed after a restarted controller raised it again, and the judge, which excused only a barrier lifted and raised during the wait, called the pass unsafe"},
		},
		Live:       func(*sim.Trial) bool { return s.finished },
		Invariants: []sim.Invariant{sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed)},
	}
}

func (s *barrierSim) round(r *sim.Trial, round int) {
	if round == s.rounds {
		s.finished = true
		return
	}
	b, err := barrier.New(fmt.Sprintf("/b/r%d", round))
	if err != nil {
		r.Errorf("%v", err)
		return
	}
	rd := &barrierRound{b: b, round: round, waiting: s.clients - 1, passed: map[int]bool{}}
	s.cur = rd
	next := func() {
		if rd.waiting == 0 && rd.removed {
			s.round(r, round+1)
		}
	}
	rd.wait = func(i int) {
		sim.After(r, r.Execs[i], draw(r.Rand, 4*time.Second), func() {
			st, up := r.NodeStat(b.Path())
			if up {
				s.held++
			}
			ex := r.Execs[i]
			sim.Across(r, ex, b.Wait(), &s.cnt, func(_ task.Unit, err error) {
				if errors.Is(err, task.ErrNoAuth) {
					// An operator's ACL refuses the wait's read for a
					// while (doc: an *OpError a retry cannot settle): it
					// waits again.
					r.Logf("client %d round %d: wait: %v", i, round, err)
					s.refused++
					if ex == r.Execs[i] {
						rd.wait(i)
					}
					return
				}
				if err != nil {
					r.Errorf("client %d round %d: wait: %v", i, round, err)
					return
				}
				if now, upNow := r.NodeStat(b.Path()); upNow {
					switch {
					case !up:
						// The barrier was down when the wait began, and
						// raised again since (an operator, or a restarted
						// controller that does not know it lifted it):
						// passing is right.
						r.Logf("client %d passed round %d: the barrier was down when the wait began and is raised again", i, round)
					case now.Czxid != st.Czxid:
						// Another node than the one up when the wait began:
						// the barrier was lifted (the node deleted, by the
						// controller or an operator) and raised again:
						// passing is right.
						r.Logf("client %d passed round %d: the barrier was lifted and raised again", i, round)
					default:
						r.Errorf("client %d passed the barrier of round %d while it is up", i, round)
						return
					}
				}
				s.passed++
				r.Progress(i)
				rd.passed[i] = true
				rd.waiting--
				next()
			})
		})
	}
	rd.control = func() {
		ctl := r.Execs[0]
		sim.Across(r, ctl, b.Set([]byte("up")), &s.cnt, func(_ task.Unit, err error) {
			if errors.Is(err, task.ErrNoAuth) {
				// An operator's ACL refuses the create for a while:
				// Set is idempotent, so it is set again a second later.
				r.Logf("round %d: set: %v", round, err)
				s.refused++
				sim.After(r, ctl, time.Second, func() {
					if ctl == r.Execs[0] {
						rd.control()
					}
				})
				return
			}
			if err != nil {
				r.Errorf("round %d: set: %v", round, err)
				return
			}
			if !rd.started {
				rd.started = true
				for i := 1; i < s.clients; i++ {
					rd.wait(i)
				}
			}
			var update func(u int)
			var remove func()
			remove = func() {
				sim.Across(r, ctl, b.Remove(), &s.cnt, func(_ task.Unit, err error) {
					if errors.Is(err, task.ErrNoAuth) {
						// An operator's ACL refuses the delete for a
						// while: the barrier is removed again a second
						// later.
						r.Logf("round %d: remove: %v", round, err)
						s.refused++
						sim.After(r, ctl, time.Second, func() {
							if ctl == r.Execs[0] {
								remove()
							}
						})
						return
					}
					if err != nil {
						r.Errorf("round %d: remove: %v", round, err)
						return
					}
					rd.removed = true
					r.Progress(0)
					next()
				})
			}
			update = func(u int) {
				if u == s.updates {
					remove()
					return
				}
				sim.After(r, ctl, time.Second+draw(r.Rand, 2*time.Second), func() {
					set := c.Retry(task.Set(b.Path(), fmt.Appendf(nil, "update %d", u), task.AnyVersion), c.Policy{})
					sim.Across(r, ctl, set, &s.cnt, func(_ task.Stat, err error) {
						if errors.Is(err, task.ErrNoNode) {
							err = nil // the operator lifted the barrier: waiters may pass
						}
						if errors.Is(err, task.ErrNoAuth) {
							// An operator's ACL refuses the write for a
							// while: this update is not made (it only
							// wakes the waiters).
							r.Logf("round %d: update %d: %v", round, u, err)
							s.refused++
							err = nil
						}
						if err != nil {
							r.Errorf("round %d: update: %v", round, err)
							return
						}
						update(u + 1)
					})
				})
			}
			update(0)
		})
	}
	rd.control()
}

func TestDoubleBarrierSimulation(t *testing.T) {
	s, sc := newDoubleSim()
	st := sim.Check(t, sc, simSeeds())
	t.Logf("%d enters, %d leaves, %d connection-loss responses, %d flows run again after expiry, %d nodes of participants not past Enter as a Leave started, %d Enters and %d Leaves refused by an ACL",
		s.entered, s.left, s.cnt.Losses, s.cnt.Expiries, s.entering, s.refusedEnters, s.refusedLeaves)
	if st.Failures() == 0 && (s.cnt.Losses == 0 || s.cnt.Expiries == 0) {
		t.Fatal("the faults never bit: the test checks nothing")
	}
	if st.Failures() == 0 && s.entering == 0 {
		t.Fatal("no Leave started with a participant still entering: its judge checks nothing there")
	}
}

func TestBarrierSimulation(t *testing.T) {
	s, sc := newBarrierSim()
	st := sim.Check(t, sc, simSeeds())
	t.Logf("%d waits passed (%d began while the barrier was up), %d connection-loss responses, %d flows run again after expiry, %d calls refused by an ACL",
		s.passed, s.held, s.cnt.Losses, s.cnt.Expiries, s.refused)
	if st.Failures() == 0 && (s.held == 0 || s.cnt.Losses == 0 || s.cnt.Expiries == 0) {
		t.Fatal("the simulation never held a waiter or the faults never bit: the test checks nothing")
	}
}

// The same seed replays the same history (server trace, faults, workload
// notes, outcome), so a failing seed printed by sim.Check replays.
func TestDeterminism(t *testing.T) {
	_, dsc := newDoubleSim()
	sim.Determinism(t, dsc, sim.Sample(10, 500))
	_, bsc := newBarrierSim()
	sim.Determinism(t, bsc, sim.Sample(10, 500))
}

// The seeds that once failed (Scenario.Regressions), on every run.
func TestSimRegressions(t *testing.T) {
	_, dsc := newDoubleSim()
	_, bsc := newBarrierSim()
	sim.Regressions(t, dsc, bsc)
}

// The large run of make sim: SIM_SEEDS seeds of each scenario (skipped
// when unset).
func TestSimExplore(t *testing.T) {
	_, dsc := newDoubleSim()
	_, bsc := newBarrierSim()
	sim.Explore(t, dsc, bsc)
}

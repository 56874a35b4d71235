package sim_test

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// lockID is the lock + ID scenario: every client loops acquiring one
// lock, logging "enter" with a fenced write, drawing an ID from a seqid
// sequence, logging "exit", releasing, and thinking for a while. A holder
// whose session expired in its section writes once more ("late"), which
// ZooKeeper must refuse. Judged by: the fencing log (tokens never go down
// in the server's order, no late write applied), IDs never repeated and
// their history linearizable, every client progressing once the faults
// stop, no contender node left at the end, and no cleanup failing with
// anything but the end of its session.
type lockID struct {
	clients int
	ids     *sim.IDs
	stopped int
	lk      *lock.Lock
	ended   []bool
	lost    map[*lock.Held]bool // sections that did not complete

	// summed over the seeds, for the test's report
	sections, idsDrawn, lostTotal, lateRefused int
}

func (s *lockID) failed(h *lock.Held) bool { return s.lost[h] }

const (
	lockDir = "/locks/l"
	logDir  = "/log"
	seqPath = "/ids/seq"
)

func lockIDScenario(clients int, duration time.Duration) sim.Scenario {
	sc, _ := newLockID(clients, duration)
	return sc
}

func newLockID(clients int, duration time.Duration) (sim.Scenario, *lockID) {
	s := &lockID{clients: clients}
	return sim.Scenario{
		Name:    fmt.Sprintf("lock+id/%d", clients),
		Clients: clients,
		// Every class. (Delay across an expiry once left a contender
		// node no flow owned, created on the new session by a request of
		// the old one: seeds 352, 548, 821, 831, 1150, 1242, 1306, 1377
		// of 1..1500. Connections that follow the executor's session,
		// task.SessionFollower, refuse such requests.)
		// The lock's directory and contenders, and the ID sequence, may
		// be closed to the clients for a while (acl).
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.01},
		ACL:      []string{lockDir, seqPath},
		Duration: duration,
		Setup:    s.setup,
		Workload: func(r *sim.Trial) {
			for i := range clients {
				s.round(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) {
			s.ids.Unknown(i) // the dead process's call may have taken an ID
			s.round(r, i)
		},
		Operator:   []string{lockDir},
		OwnDeletes: []string{lockDir},
		Counters:   []string{lockDir},
		// A contender re-created under its exact name is a forgery the
		// lock's fence cannot see (recipes/lock doc, Safety).
		OperatorDeleteOnly: []string{lockDir + "/"},
		Quiesce:            func(r *sim.Trial) bool { return s.stopped == clients && len(r.Children(lockDir)) == 0 },
		Invariants: []sim.Invariant{
			sim.InvariantFunc(func(r *sim.Trial) error {
				n, err := sim.CheckFencing(r.World, logDir)
				s.sections += n
				s.idsDrawn += s.ids.Len()
				s.lostTotal += len(s.lost)
				return err
			}),
			sim.InvariantFunc(func(*sim.Trial) error { return s.ids.Linearizable() }),
			// A cleanup an ACL refuses reports the refusal and runs
			// again in the background (Quiesce waits for its node).
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}, s
}

func (s *lockID) setup(r *sim.Trial) error {
	s.ids, s.stopped, s.ended, s.lost = sim.NewIDs(), 0, make([]bool, s.clients), map[*lock.Held]bool{}
	lk, err := lock.New(lockDir)
	if err != nil {
		return err
	}
	s.lk = lk
	return makeDirs(r, logDir, "/ids")
}

// round runs one acquire-section-release round on client i, then the
// next, until the trial is stopping.
func (s *lockID) round(r *sim.Trial, i int) {
	if r.Stopping() || r.Closing() {
		if !s.ended[i] {
			s.ended[i] = true
			s.stopped++
		}
		return
	}
	next := func() {
		think := time.Duration(r.Rand.Int64N(int64(200 * time.Millisecond)))
		executor.Submit(r.Execs[i], c.Sleep(think), func(task.Unit, error) { s.round(r, i) })
	}
	executor.Submit(r.Execs[i], s.lk.Acquire(), func(h *lock.Held, err error) {
		if err != nil {
			if !r.Closing() && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, lock.ErrLockLost) &&
				!errors.Is(err, task.ErrNoAuth) { // an operator's ACL refuses it for a while
				r.Errorf("client %d: acquire: %v", i, err)
			}
			next()
			return
		}
		bar := r.OpenSpan(i, "lock", "token "+strconv.FormatInt(h.Token(), 10)) // on the seed's picture
		s.ids.Call(i)
		section := c.Seq(h.Fenced(sim.FencedEntry(logDir, h.Token(), "enter")),
			c.Then(seqid.Next(seqPath), func(id int64) task.Task[[]task.MultiResult] {
				r.Check(s.ids.Return(i, id))
				return h.Fenced(sim.FencedEntry(logDir, h.Token(), "exit"))
			}))
		executor.Submit(r.Execs[i], section, func(_ []task.MultiResult, err error) {
			s.ids.Unknown(i) // no-op if the ID was returned
			if err != nil {
				s.lost[h] = true
			}
			if err != nil && !r.Closing() && !errors.Is(err, lock.ErrLockLost) && !errors.Is(err, task.ErrSessionExpired) && !task.IsRetryable(err) &&
				!errors.Is(err, task.ErrNoAuth) {
				r.Errorf("client %d: section: %v", i, err)
			}
			late := task.Value[[]task.MultiResult](nil)
			if errors.Is(err, task.ErrSessionExpired) {
				// A holder that ignores the loss writes again on the new
				// session: ZooKeeper must refuse it.
				late = c.Catch(h.Fenced(sim.FencedEntry(logDir, h.Token(), "late")),
					func(err error) task.Task[[]task.MultiResult] {
						if errors.Is(err, lock.ErrLockLost) {
							s.lateRefused++
						}
						return task.Value[[]task.MultiResult](nil)
					})
			}
			executor.Submit(r.Execs[i], c.Seq(late, h.Release()), func(_ task.Unit, err error) {
				r.CloseSpan(bar)
				// A release bound to a session that expires meanwhile ends
				// with it (the node goes with the session).
				// A release an ACL refuses goes on in the background
				// (recipes/lock, Release).
				if err != nil && !r.Closing() && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrNoAuth) {
					r.Errorf("client %d: release: %v", i, err)
				}
				if err == nil && !s.failed(h) {
					r.Progress(i)
				}
				next()
			})
		})
	})
}

// makeDirs creates each of paths, a persistent node, on client 0 (a
// scenario's Setup).
func makeDirs(r *sim.Trial, paths ...string) error {
	for _, p := range paths {
		if _, err := sim.Run(r.World, 0, task.Create(p, nil, task.Persistent)); err != nil {
			return err
		}
	}
	return nil
}

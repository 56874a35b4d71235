package semaphore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

const (
	semPath   = "/sem/s"
	leasesDir = semPath + "/leases"
	locksDir  = semPath + "/locks"
	logDir    = "/log"
	simLeases = 2
)

// semSim is the semaphore scenario: 5 clients share a semaphore of 2
// leases; each loops acquiring a lease, logging "enter" with a fenced
// write, holding it a while, logging "exit" with a fenced write,
// releasing it, and thinking a while; client 0, one round in three (drawn
// on a stream of its own), takes both leases at once (AcquireMany(2)) and
// logs and releases each. A holder whose session expired in its section
// writes once more ("late"), which ZooKeeper must refuse.
//
// Judged from the checker's view, the server's tree: a holder is a lease
// whose fenced "enter" the server applied, whose "exit" it has not, and
// whose node exists (the fence makes the log entries a lease's own: they
// are applied only while its node exists). At every delivery to any
// client (a reply, a watch or session event: the judge wraps every
// client's connection) at most 2 such holders exist. At the end: no
// "late" write was applied; in the server's order of the log, no more
// than 2 sections that logged both "enter" and "exit" overlap; every
// client progressed once the faults stopped; no lease or internal-lock
// node is left; a holder whose section failed with session expiry was
// told its lease is lost; no cleanup failed but by the end of its
// session.
type semSim struct {
	clients int
	sem     *semaphore.Semaphore
	r       *sim.Trial
	ended   []bool
	stopped int

	// the judge's view of the fencing log
	log      sim.FenceTail  // the entries read so far
	open     map[int64]bool // tokens whose "enter" is applied and "exit" not
	peak     int
	lastZxid int64 // the server's zxid at the last count: unchanged, so is the tree

	// many draws when client 0 takes two leases at once (AcquireMany), on
	// a stream of its own
	many *rand.Rand

	// summed over the seeds, for the test's report
	sections, lost, lateRefused, busy, maxPeak, peakAtN, manyTried, manyHeld int
	droppedLost                                                              int // lost leases dropped without Release
}

func newSemSim() (*semSim, sim.Scenario) {
	s := &semSim{clients: 5}
	return s, sim.Scenario{
		Name:    "semaphore",
		Clients: s.clients,
		// An operator closes the leases' or the internal lock's directory,
		// or a node in them, for a while, or makes it read only.
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.01},
		ACL:      []string{leasesDir, locksDir},
		Duration: 15 * time.Second,
		Wrap: func(i int, conn *fakezk.Conn) task.Conn {
			return &judgedConn{Conn: conn, judge: s.judge}
		},
		Setup: s.setup,
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.round(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) { s.round(r, i) },
		Regressions: []sim.Regression{
			{Seed: 43, ReconnectLag: true, Why: "liveness: the same as semaphore/blocking seed 37, on the task face"},
			{Seed: 10121803, Why: "acl class: a TryAcquire that found no lease free withdrew its lease node, and the internal lock's release was refused (PATH/locks made read only): the try failed with ErrBusy with its internal lock node still there (it now fails with the refusal; the node goes once the ACL lets it)"},
			{Seed: 122, Why: "acl class: the internal lock's TryAcquire found a contender ahead and withdrew its node, whose delete was refused (PATH/locks made read only): the lock's try failed with ErrBusy, and so did the semaphore's, with the internal lock node still there (recipes/lock: the try now fails with the refusal)"},
			{Seed: 10100074, Why: "the workload, acl class: of an AcquireMany's two leases, the first one's Release was refused by an ACL, and the workload's chain of releases stopped there: the second lease was never released and its node stayed for the session's life (each lease is now released whatever the others' Release returned)"},
			{Seed: 34, NoACL: true, NoOperatorWrites: true, Why: "twins (one executor seed) drew one lease prefix, and with the leases' counter stuck at its maximum the second one's create of _c_<id>-lease-2147483647 failed with NodeExists, reported to the caller; lease prefixes are now mixed with the session's id"},
			{Seed: 1000000054, NoACL: true, NoOperatorWrites: true, Why: "as 34 (twins' lease creates clashing at the counter's maximum)"},
			{Seed: 154535493870791, NoACL: true, Why: "liveness: the operator wrote a waiting contender of the internal lock, then deleted it; the contender after it took the write for the holder's mark and took the internal lock while the one below still held it, both then waited on the leases with a lease each, for good (the lock's doc rules such writes out: the scenario no longer makes them)"},
			{Seed: 5009757, NoACL: true, NoOperatorWrites: true, Why: "liveness: the operator deleted two internal lock nodes; three acquirers each took the lock as theirs, made three lease nodes for two leases and waited on the leases only, with nothing to wake them"},
		},
		// Lease nodes and the internal lock's contenders are named with a
		// secret of their holder: re-created under that name they are a
		// forgery no fence can see (recipes/lock doc, Safety).
		// The operator writes leases (the lease is lost), never the
		// internal lock's contenders: a write to a waiting one passes for
		// its holder's mark (recipes/lock doc, Safety; the package doc
		// says so too).
		Operator:           []string{leasesDir, locksDir},
		OwnDeletes:         []string{leasesDir, locksDir},
		OperatorDeleteOnly: []string{leasesDir + "/", locksDir + "/"},
		OperatorWrites:     true,
		OperatorNoWrites:   []string{locksDir + "/"},
		Counters:           []string{leasesDir, locksDir},
		Quiesce: func(r *sim.Trial) bool {
			return s.stopped == s.clients && len(r.Children(leasesDir)) == 0 && len(r.Children(locksDir)) == 0
		},
		Invariants: []sim.Invariant{
			sim.InvariantFunc(s.judgeLog),
			// A cleanup or give-back an operator's ACL refused is
			// reported, and goes on in the background: Quiesce sees that
			// it ends.
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}
}

func (s *semSim) setup(r *sim.Trial) error {
	s.r, s.ended, s.stopped = r, make([]bool, s.clients), 0
	s.many = rand.New(rand.NewPCG(r.Seed, 11))
	s.log, s.open, s.peak, s.lastZxid = sim.FenceTail{}, map[int64]bool{}, 0, -1
	m, err := semaphore.New(semPath, simLeases)
	if err != nil {
		return err
	}
	s.sem = m
	for _, p := range []string{logDir, "/sem"} {
		if _, err := sim.Run(r.World, 0, task.Create(p, nil, task.Persistent)); err != nil {
			return err
		}
	}
	return nil
}

// judgedConn runs the judge after every delivery to its client.
type judgedConn struct {
	*fakezk.Conn
	judge func()
}

func (jc *judgedConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	var w func(task.Event)
	if watch != nil {
		w = func(ev task.Event) { jc.judge(); watch(ev) }
	}
	jc.Conn.Do(req, func(r task.Response) { jc.judge(); done(r) }, w)
}

func (jc *judgedConn) Start(events func(task.Event)) error {
	return jc.Conn.Start(func(ev task.Event) { jc.judge(); events(ev) })
}

// judge counts the holders from the server's tree (see semSim) and fails
// the seed if there are more than the semaphore's leases.
func (s *semSim) judge() {
	r := s.r
	if r == nil || s.open == nil || r.Closing() {
		return
	}
	if z := r.Server.Zxid(); z != s.lastZxid {
		s.lastZxid = z
	} else {
		return // the tree is as it was at the last count
	}
	added, reset, err := s.log.Next(r.World, logDir)
	if err != nil {
		r.Errorf("%v", err)
		return
	}
	if reset {
		clear(s.open)
	}
	for _, e := range added {
		switch e.Kind {
		case "enter":
			s.open[e.Token] = true
		case "exit":
			delete(s.open, e.Token)
		}
	}
	// Counted first; named only for the report of a violation.
	names := r.Children(leasesDir)
	n := 0
	for _, name := range names {
		if st, ok := r.NodeStat(leasesDir + "/" + name); ok && s.open[st.Czxid] {
			n++
		}
	}
	s.peak = max(s.peak, n)
	if n > simLeases {
		var holders []string
		for _, name := range names {
			if st, ok := r.NodeStat(leasesDir + "/" + name); ok && s.open[st.Czxid] {
				holders = append(holders, name+" (token "+strconv.FormatInt(st.Czxid, 10)+")")
			}
		}
		r.Errorf("%d holders of %d leases at once: %v", n, simLeases, holders)
	}
}

// judgeLog judges the fencing log at the end: no late write applied, and
// in the server's order no more than simLeases closed sections overlap.
func (s *semSim) judgeLog(r *sim.Trial) error {
	log, err := sim.FenceLog(r.World, logDir)
	if err != nil {
		return err
	}
	closed := map[int64]bool{}
	for _, e := range log {
		if e.Kind == "late" {
			return fmt.Errorf("a fenced write after the lease was lost was applied: token %d, seq %d", e.Token, e.Seq)
		}
		if e.Kind == "exit" {
			closed[e.Token] = true
		}
	}
	in := map[int64]bool{}
	for _, e := range log {
		if !closed[e.Token] {
			continue
		}
		switch e.Kind {
		case "enter":
			in[e.Token] = true
			s.sections++
			if len(in) > simLeases {
				return fmt.Errorf("%d sections overlap in the log at seq %d: tokens %v", len(in), e.Seq, slices.Sorted(mapKeys(in)))
			}
		case "exit":
			delete(in, e.Token)
		}
	}
	s.maxPeak = max(s.maxPeak, s.peak)
	if s.peak == simLeases {
		s.peakAtN++
	}
	return nil
}

func mapKeys(m map[int64]bool) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// round runs one acquire-section-release round on client i, then the
// next, until the trial is stopping. Odd clients now and then use
// TryAcquire.
func (s *semSim) round(r *sim.Trial, i int) {
	if r.Stopping() || r.Closing() {
		if !s.ended[i] {
			s.ended[i] = true
			s.stopped++
		}
		return
	}
	ex := r.Execs[i]
	next := func() {
		think := time.Duration(r.Rand.Int64N(int64(300 * time.Millisecond)))
		executor.Submit(ex, c.Sleep(think), func(task.Unit, error) { s.round(r, i) })
	}
	one := func(t task.Task[*semaphore.Lease]) task.Task[[]*semaphore.Lease] {
		return c.Map(t, func(l *semaphore.Lease) []*semaphore.Lease { return []*semaphore.Lease{l} })
	}
	acquire := one(s.sem.Acquire())
	if i%2 == 1 && r.Rand.IntN(3) == 0 {
		acquire = one(s.tryAcquire(r, i))
	}
	if i == 0 && s.many.IntN(3) == 0 {
		// Two leases at once (AcquireMany): each counts, and an acquire
		// that fails part-way leaves no lease behind.
		acquire = s.sem.AcquireMany(2)
		s.manyTried++
	}
	executor.Submit(ex, acquire, func(ls []*semaphore.Lease, err error) {
		if err != nil {
			if errors.Is(err, semaphore.ErrBusy) {
				s.busy++
			} else if !r.Closing() && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, semaphore.ErrLeaseLost) && !task.IsRetryable(err) &&
				!errors.Is(err, task.ErrNoAuth) { // an operator's ACL refuses it for a while
				r.Errorf("client %d: acquire: %v", i, err)
			}
			next()
			return
		}
		if len(ls) > 1 {
			s.manyHeld++
		}
		var bars []sim.SpanID
		enter, exit := task.Value[[]task.MultiResult](nil), task.Value[[]task.MultiResult](nil)
		for _, l := range ls {
			bars = append(bars, r.OpenSpan(i, "lease", "token "+strconv.FormatInt(l.Token(), 10)))
			enter = c.Seq(enter, l.Fenced(sim.FencedEntry(logDir, l.Token(), "enter")))
			exit = c.Seq(exit, l.Fenced(sim.FencedEntry(logDir, l.Token(), "exit")))
		}
		hold := time.Duration(200+r.Rand.Int64N(800)) * time.Millisecond
		section := c.Seq(enter, c.Seq(c.Sleep(hold), exit))
		executor.Submit(ex, section, func(_ []task.MultiResult, err error) {
			if err != nil {
				s.lost++
			}
			if err != nil && !r.Closing() && !errors.Is(err, semaphore.ErrLeaseLost) && !errors.Is(err, task.ErrSessionExpired) && !task.IsRetryable(err) {
				r.Errorf("client %d: section: %v", i, err)
			}
			late := task.Value[[]task.MultiResult](nil)
			release := task.Done
			// Each lease is given back whatever the others' Release
			// returned: one an ACL refuses fails with ErrNoAuth (its
			// delete goes on in the background) and must not keep the
			// next from being released.
			var rerrs []error
			for _, l := range ls {
				if errors.Is(err, task.ErrSessionExpired) {
					// The session ended under the section: the holder must
					// have been told before it runs anything on the next one.
					if l.Err() == nil && !r.Closing() {
						r.Errorf("client %d: lease %s of an ended session not signalled lost", i, l.Path())
					}
					// A holder that ignores the loss writes again on the new
					// session: ZooKeeper must refuse it.
					late = c.Seq(late, c.Catch(l.Fenced(sim.FencedEntry(logDir, l.Token(), "late")),
						func(err error) task.Task[[]task.MultiResult] {
							if errors.Is(err, semaphore.ErrLeaseLost) {
								s.lateRefused++
							}
							return task.Value[[]task.MultiResult](nil)
						}))
				}
				if errors.Is(l.Err(), semaphore.ErrLeaseLost) && !errors.Is(l.Err(), task.ErrSessionExpired) && l.Token()%2 == 0 {
					// Half the leases lost while the session lives (the
					// operator wrote or deleted their node) are dropped
					// without Release: the recipe deletes a lost lease's
					// node itself, or the others would wait behind it
					// until the session ends (Quiesce: no lease left).
					s.droppedLost++
					continue
				}
				release = c.Seq(release, c.Catch(l.Release(), func(err error) task.Task[task.Unit] {
					rerrs = append(rerrs, err)
					return task.Done
				}))
			}
			executor.Submit(ex, c.Seq(late, release), func(_ task.Unit, rerr error) {
				for _, bar := range bars {
					r.CloseSpan(bar)
				}
				if rerr != nil {
					rerrs = append(rerrs, rerr)
				}
				for _, rerr := range rerrs {
					// A delete an operator's ACL refuses fails with
					// ErrNoAuth and goes on in the background (Quiesce: no
					// lease left).
					if !r.Closing() && !errors.Is(rerr, task.ErrSessionExpired) && !errors.Is(rerr, task.ErrNoAuth) {
						r.Errorf("client %d: release: %v", i, rerr)
					}
				}
				if len(rerrs) == 0 && err == nil {
					r.Progress(i)
				}
				next()
			})
		})
	})
}

// tryAcquire is TryAcquire, judged: when it fails with ErrBusy, no lease
// or internal lock node that its session created while it ran is left
// (the doc: it fails "leaving no node behind"; a node left to the
// cleanup flow would be there when the caller hears ErrBusy, and the
// caller's next try could find it ahead). The odd clients run one round
// at a time, and the cleanups of their earlier rounds only delete, so
// the nodes of the session that were not there before are the try's.
func (s *semSim) tryAcquire(r *sim.Trial, i int) task.Task[*semaphore.Lease] {
	return func(sc *task.Scope, k task.Cont[*semaphore.Lease]) {
		owner := sc.Session().ID
		before := ownNodes(r, owner)
		task.Run(sc, s.sem.TryAcquire(), func(l *semaphore.Lease, err error) {
			if errors.Is(err, semaphore.ErrBusy) && !r.Closing() {
				for p := range ownNodes(r, owner) {
					if !before[p] {
						r.Errorf("client %d: TryAcquire failed with ErrBusy and left its node %s", i, p)
					}
				}
			}
			k(l, err)
		})
	}
}

// ownNodes is the set of lease and internal lock nodes session owner
// owns, read from the server's tree.
func ownNodes(r *sim.Trial, owner int64) map[string]bool {
	out := map[string]bool{}
	for _, dir := range []string{leasesDir, locksDir} {
		for _, name := range r.Children(dir) {
			if st, ok := r.NodeStat(dir + "/" + name); ok && st.EphemeralOwner == owner {
				out[dir+"/"+name] = true
			}
		}
	}
	return out
}

func simSeeds() int {
	if testing.Short() {
		return 20 // 10 drew no lost lease dropped without Release
	}
	return 60
}

func TestSimulation(t *testing.T) {
	s, sc := newSemSim()
	st := sim.Check(t, sc, simSeeds())
	if st.Failures() > 0 {
		return
	}
	t.Logf("%d sections that entered and exited, %d cut short by a fault, %d late writes refused, %d tries found no lease, %d lost leases dropped without Release; most holders at once %d (%d seeds reached %d)",
		s.sections, s.lost, s.lateRefused, s.busy, s.droppedLost, s.maxPeak, s.peakAtN, simLeases)
	if s.sections == 0 || s.lost == 0 || s.lateRefused == 0 || s.busy == 0 || s.peakAtN == 0 || s.droppedLost == 0 {
		t.Fatal("no contention or the faults never bit: the scenario checks nothing")
	}
	t.Logf("AcquireMany(2): %d tried, %d held two leases", s.manyTried, s.manyHeld)
	if s.manyHeld == 0 {
		t.Fatal("no AcquireMany held its leases: the scenario checks nothing there")
	}
}

// The same seed replays the same history.
func TestSimDeterminism(t *testing.T) {
	_, sc := newSemSim()
	sim.Determinism(t, sc, sim.Sample(10, 1000))
}

// Every seed that ever failed, in every plain go test.
func TestSimRegressions(t *testing.T) {
	_, sc := newSemSim()
	sim.Regressions(t, sc)
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newSemSim()
	sim.Explore(t, sc)
}

// Each known bug, switched back on, is caught by the simulation within
// canaryBound seeds, in each of canaryHunts disjoint seed ranges.
func TestCanariesCaught(t *testing.T) {
	const canaryHunts, canaryBound = 3, 300
	for _, name := range semaphore.Canaries {
		t.Run(strings.TrimPrefix(string(name), "semaphore/"), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newSemSim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

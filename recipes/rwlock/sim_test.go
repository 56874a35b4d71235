package rwlock_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// The readers-writer lock on the shared scenario machinery (fakezk/sim):
// fault plans drawn per seed from every class (drops applied and not,
// short and long partitions, delays, expiries, server restarts, clock
// jumps, crash-restarts, an operator deleting contender nodes, processes
// paused past their session timeout), a workload under faults for 20s of
// simulated time, liveness once they stop, then quiescence and the
// invariants.
//
// Each of 5 clients loops: take the lock, a writer one time in three and
// a reader otherwise; log "enter" and "exit" with fenced writes
// (sim.FencedEntry, kinds wenter/wexit or renter/rexit) with simulated
// time between; release. A holder whose session expired in its section
// writes once more ("late"), which ZooKeeper must refuse. Judged by:
//
//   - at every reader's grant whose node exists: no writer contender
//     with a lower number exists (writers are not starved);
//   - at every grant whose node exists, on the server's tree: no other
//     granted and not yet released hold whose node still exists when
//     either is a writer (the recipe grants only over nodes that are
//     gone; a grant over our own node deleted by an operator is a hold
//     already lost, judged by the fence);
//   - the fencing log (judgeRW): in the order the server applied the
//     writes, the span of a writer's entries overlaps no other holder's
//     span, and its token is above every token logged before it and
//     below every token logged after it (strictly: no other holder enters
//     with it); no late write applied;
//   - no herd: when a client sets an exists watch on a contender node
//     (herdConn), no contender that exists between that node and the
//     client's own could let it hold sooner: a writer watches the node
//     right below its own, a reader the nearest writer below its own
//     (every node below ours was created before ours, so our listing saw
//     those that still exist);
//   - a holder whose section failed because its session ended has been
//     told (Err) before its client runs anything more;
//   - no contender node left after the loops end; no cleanup failing
//     with anything but the end of its session.
type rwSim struct {
	r       *sim.Trial // the seed's trial, once set up
	clients int
	l       *rwlock.RWLock
	holders []*rwlock.Held // granted, not yet released
	stopped int
	ended   []bool

	// summed over the seeds, for the test's report
	stats       judged
	droppedLost int // lost holds dropped without Release
}

const (
	rwDir      = "/locks/rw"
	rwLog      = "/log"
	rwClients  = 5
	rwDuration = 20 * time.Second
)

func newRWSim() (*rwSim, sim.Scenario) {
	s := &rwSim{clients: rwClients}
	return s, sim.Scenario{
		Name:    "rwlock",
		Clients: rwClients,
		// An operator closes the directory, or a contender in it, for a
		// while, or makes it read only.
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL)},
		ACL:      []string{rwDir},
		Duration: rwDuration,
		Regressions: []sim.Regression{
			{Seed: 1511, Why: "the judge, acl class: a writer's fenced enter, its node closed by an ACL, was refused (the hold marked lost, its node's delete refused too); once the ACL was back its late write passed while its node still existed, which the fence allows (no other holder while it exists): a hold lost to a refusal writes no late entry"},
			{Seed: 1000000035, NoACL: true, Why: "liveness: with the directory's counter exhausted, a contender waited for the directory to empty after the others had deleted and made it again; they kept it busy for ever"},
		},
		Setup: s.setup,
		Wrap: func(i int, conn *fakezk.Conn) task.Conn {
			return &herdConn{Conn: conn, s: s, client: i}
		},
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.round(r, i)
			}
		},
		Restart:        func(r *sim.Trial, i int) { s.round(r, i) },
		Operator:       []string{rwDir},
		OwnDeletes:     []string{rwDir},
		OperatorWrites: true,
		Counters:       []string{rwDir},
		// A contender re-created under its exact name is a forgery the
		// fence cannot see (package doc, Safety).
		OperatorDeleteOnly: []string{rwDir + "/"},
		Quiesce:            func(r *sim.Trial) bool { return s.stopped == s.clients && len(r.Children(rwDir)) == 0 },
		Invariants: []sim.Invariant{
			sim.InvariantFunc(func(r *sim.Trial) error {
				log, err := sim.FenceLog(r.World, rwLog)
				if err != nil {
					return err
				}
				j, err := judgeRW(log)
				s.stats.add(j)
				return err
			}),
			// A cleanup or give-back an operator's ACL refused is
			// reported, and goes on in the background: Quiesce sees that
			// it ends.
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}
}

func (s *rwSim) setup(r *sim.Trial) error {
	s.r = r
	s.holders, s.stopped, s.ended = nil, 0, make([]bool, s.clients)
	l, err := rwlock.New(rwDir)
	if err != nil {
		return err
	}
	s.l = l
	_, err = sim.Run(r.World, 0, task.Create(rwLog, nil, task.Persistent))
	return err
}

// granted checks a new hold against every hold granted and not yet
// released whose node is still on the server.
func (s *rwSim) granted(r *sim.Trial, i int, h *rwlock.Held) {
	s.holders = append(s.holders, h)
	if _, ok := r.NodeStat(h.Path()); !ok {
		// Granted over a node that is gone (an operator deleted it while
		// it waited): a hold that is lost already, whose fenced writes
		// fail (package doc, Faults).
		return
	}
	if h.Mode() == rwlock.Read && !zkops.Exhausted(h.Seq()) {
		// Writers are not starved (the package doc): a reader granted
		// while a writer with a lower number waits (its node exists:
		// created before the reader's, so the reader's listing saw it)
		// passed it.
		for _, n := range r.Children(rwDir) {
			const writeTag = "__WRIT__"
			if seq, ok := zkops.SeqAfter(n, writeTag); ok && !zkops.Exhausted(seq) && seq < h.Seq() {
				r.Errorf("client %d granted the read lock %s while the writer %s, lower, waits", i, h.Path(), n)
			}
		}
	}
	for _, o := range s.holders[:len(s.holders)-1] {
		if h.Mode() == rwlock.Read && o.Mode() == rwlock.Read {
			continue
		}
		if _, ok := r.NodeStat(o.Path()); ok {
			r.Errorf("client %d granted the %s lock %s while the %s lock %s is held (its node exists)", i, h.Mode(), h.Path(), o.Mode(), o.Path())
		}
	}
}

func (s *rwSim) released(h *rwlock.Held) {
	if k := slices.Index(s.holders, h); k >= 0 {
		s.holders = slices.Delete(s.holders, k, k+1)
	}
}

// round runs one acquire-section-release round on client i, then the
// next, until the trial is stopping.
func (s *rwSim) round(r *sim.Trial, i int) {
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
	acquire, w := s.l.AcquireRead(), "r"
	if r.Rand.IntN(3) == 0 {
		acquire, w = s.l.Acquire(), "w"
	}
	hold := time.Duration(100+r.Rand.IntN(1500)) * time.Millisecond
	executor.Submit(ex, acquire, func(h *rwlock.Held, err error) {
		if r.Closing() {
			return
		}
		if err != nil {
			if !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, rwlock.ErrLockLost) &&
				!errors.Is(err, task.ErrNoAuth) { // an operator's ACL refuses it for a while
				r.Errorf("client %d: acquire: %v", i, err)
			}
			next()
			return
		}
		s.granted(r, i, h)
		bar := r.OpenSpan(i, h.Mode().String(), "token "+strconv.FormatInt(h.Token(), 10))
		entry := func(kind string) task.MultiOp { return sim.FencedEntry(rwLog, h.Token(), kind) }
		section := c.Seq(h.Fenced(entry(w+"enter")), c.Seq(c.Sleep(hold), h.Fenced(entry(w+"exit"))))
		executor.Submit(ex, section, func(_ []task.MultiResult, err error) {
			if r.Closing() {
				return
			}
			if err != nil && !errors.Is(err, rwlock.ErrLockLost) && !errors.Is(err, task.ErrSessionExpired) && !task.IsRetryable(err) {
				r.Errorf("client %d: section: %v", i, err)
			}
			late := task.Value[[]task.MultiResult](nil)
			// A hold that ended on its own fenced write refused by an
			// operator's ACL (Fenced: the check failed, the lock is
			// marked lost) keeps its node until its delete is allowed
			// (zkops.KeepDeleting): the fence applies writes while the
			// node exists (package doc), so a write of it that passes
			// once the ACL is back is no late write; it is still
			// exclusive, as judgeRW's overlaps check.
			refused := errors.Is(h.Err(), task.ErrNoAuth) && !errors.Is(err, task.ErrSessionExpired)
			if !refused && (errors.Is(err, task.ErrSessionExpired) || h.Err() != nil && !errors.Is(h.Err(), rwlock.ErrUnlocked)) {
				// A holder that lost and writes regardless: refused.
				late = c.Catch(h.Fenced(entry("late")), func(error) task.Task[[]task.MultiResult] {
					return task.Value[[]task.MultiResult](nil)
				})
			}
			if errors.Is(err, task.ErrSessionExpired) {
				// The section failed because the session ended: by the
				// time the client runs anything more, the holder has
				// been told.
				told := task.Func(func(*task.Scope) (task.Unit, error) {
					if h.Err() == nil && !r.Closing() {
						r.Errorf("client %d: %s lock %s of an ended session not signalled lost", i, h.Mode(), h.Path())
					}
					return task.Unit{}, nil
				})
				late = c.Seq(told, late)
			}
			s.released(h)
			release := h.Release()
			if errors.Is(h.Err(), rwlock.ErrLockLost) && !errors.Is(h.Err(), task.ErrSessionExpired) && h.Token()%2 == 0 {
				// Half the holds lost while the session lives (the
				// operator wrote or deleted their node) are dropped
				// without Release: the recipe deletes a lost hold's node
				// itself, or the others would wait behind it until the
				// session ends.
				s.droppedLost++
				release = task.Done
			}
			executor.Submit(ex, c.Seq(late, release), func(_ task.Unit, rerr error) {
				r.CloseSpan(bar)
				if r.Closing() {
					return
				}
				// A delete an operator's ACL refuses fails with ErrNoAuth
				// and goes on in the background (Quiesce: no node left).
				if rerr != nil && !errors.Is(rerr, task.ErrSessionExpired) && !errors.Is(rerr, task.ErrNoAuth) {
					r.Errorf("client %d: release: %v", i, rerr)
				}
				if err == nil && rerr == nil {
					r.Progress(i)
				}
				next()
			})
		})
	})
}

// judged is what judgeRW saw.
type judged struct {
	writers, readers int // sections (tokens) logged
	overlaps         int // pairs of reader spans that overlap: readers shared the lock
}

func (j *judged) add(o judged) {
	j.writers += o.writers
	j.readers += o.readers
	j.overlaps += o.overlaps
}

// judgeRW judges a fencing log of readers and writers (kinds renter,
// rexit, wenter, wexit, late), in the server's order: each token's span
// runs from its first entry to its last. A writer's span overlaps no
// other token's span, and its token is above every token whose span ended
// before it and below every token whose span starts after it. No late
// entry was applied. No holder enters again with a writer's token after
// an exit (a writer's token is above every earlier holder's and below
// every later one's: none shares it, the same client's next hold
// included). The fence makes a span a stretch of time the
// holder's node existed throughout (each entry was applied with a check
// on it, and a deleted node never comes back under its unique name), so
// two overlapping spans are two nodes that existed at once while both
// were held.
func judgeRW(log []sim.LogEntry) (j judged, err error) {
	type span struct {
		token       int64
		first, last int
		write       bool
	}
	var spans []*span
	by := map[int64]*span{}
	for k, e := range log {
		if e.Kind == "late" {
			return j, fmt.Errorf("a fenced write after the lock was lost was applied: token %d, seq %d", e.Token, e.Seq)
		}
		sp := by[e.Token]
		if sp != nil && strings.HasSuffix(e.Kind, "enter") && !strings.HasSuffix(log[sp.last].Kind, "enter") && (sp.write || strings.HasPrefix(e.Kind, "w")) {
			// The doc: a writer's token is above every earlier holder's
			// and below every later one's, so no holder shares it.
			return j, fmt.Errorf("two holders with one token: token %d %s (seq %d) after its %s (seq %d)", e.Token, e.Kind, e.Seq, log[sp.last].Kind, log[sp.last].Seq)
		}
		if sp == nil {
			sp = &span{token: e.Token, first: k, write: strings.HasPrefix(e.Kind, "w")}
			by[e.Token] = sp
			spans = append(spans, sp)
		}
		sp.last = k
	}
	for _, a := range spans {
		if a.write {
			j.writers++
		} else {
			j.readers++
		}
		for _, b := range spans {
			if a == b {
				continue
			}
			overlap := a.first <= b.last && b.first <= a.last
			switch {
			case !a.write && !b.write:
				if overlap && a.token < b.token {
					j.overlaps++
				}
			case overlap:
				return j, fmt.Errorf("holders overlap: token %d (%s, entries %d-%d) and token %d (%s, entries %d-%d)",
					a.token, kind(a.write), log[a.first].Seq, log[a.last].Seq, b.token, kind(b.write), log[b.first].Seq, log[b.last].Seq)
			case a.write && b.last < a.first && b.token > a.token:
				return j, fmt.Errorf("writer token %d logged after token %d, which is larger", a.token, b.token)
			case a.write && b.first > a.last && b.token < a.token:
				return j, fmt.Errorf("writer token %d logged before token %d, which is smaller", a.token, b.token)
			}
		}
	}
	return j, nil
}

func kind(write bool) string {
	if write {
		return "writer"
	}
	return "reader"
}

func simSeeds() int {
	if testing.Short() {
		return 30
	}
	return 200
}

// The scenario over a fixed range of seeds, on every test run: it must
// see writers and readers hold, and readers share the lock.
func TestSimScenario(t *testing.T) {
	s, sc := newRWSim()
	st := sim.Check(t, sc, simSeeds())
	if st.Failures() > 0 {
		return
	}
	t.Logf("%d writer and %d reader sections logged, %d pairs of readers overlapping, %d lost holds dropped without Release", s.stats.writers, s.stats.readers, s.stats.overlaps, s.droppedLost)
	if s.stats.writers == 0 || s.stats.readers == 0 || s.stats.overlaps == 0 || s.droppedLost == 0 {
		t.Fatal("the workload never had writers, readers, or readers sharing the lock: the judge checks nothing")
	}
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newRWSim()
	sim.Explore(t, sc)
}

// The seeds that once failed (Scenario.Regressions), on every run.
func TestSimRegressions(t *testing.T) {
	_, sc := newRWSim()
	sim.Regressions(t, sc)
}

// A sample of seeds runs twice with the same history.
func TestSimDeterminism(t *testing.T) {
	_, sc := newRWSim()
	sim.Determinism(t, sc, sim.Sample(5, 500))
}

// herdConn checks every exists watch its client sets on a contender node
// (see rwSim, no herd).
type herdConn struct {
	*fakezk.Conn
	s      *rwSim
	client int
}

func (c *herdConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if r, ok := req.(*task.ExistsRequest); ok && watch != nil && c.s.r != nil && strings.HasPrefix(r.Path, rwDir+"/") {
		c.s.checkWatch(c.client, c.SessionID(), r.Path)
	}
	c.Conn.Do(req, done, watch)
}

// contender parses a contender's name: its number and whether it is a
// writer.
func contender(name string) (seq int64, write, ok bool) {
	for _, tag := range []string{"__WRIT__", "__READ__"} {
		if i := strings.LastIndex(name, tag); i >= 0 {
			n, err := strconv.ParseInt(name[i+len(tag):], 10, 64)
			return n, tag == "__WRIT__", err == nil
		}
	}
	return 0, false, false
}

// checkWatch judges a watch client i (on session sess) sets on path:
// skipped when path is gone or the session owns no single contender.
func (s *rwSim) checkWatch(i int, sess int64, path string) {
	r := s.r
	if r.Closing() {
		return
	}
	if _, ok := r.NodeStat(path); !ok {
		return
	}
	target, _, ok := contender(path[len(rwDir)+1:])
	if !ok {
		return
	}
	names := r.Children(rwDir)
	var mine []string
	for _, n := range names {
		if st, ok := r.NodeStat(rwDir + "/" + n); ok && st.EphemeralOwner == sess {
			mine = append(mine, n)
		}
	}
	if len(mine) != 1 {
		return
	}
	own, write, ok := contender(mine[0])
	if !ok {
		return
	}
	for _, n := range names {
		seq, w, ok := contender(n)
		if ok && seq > target && seq < own && (write || w) {
			r.Errorf("client %d (%s) watches %s, though %s lies between it and its node %s (a herd)", i, map[bool]string{true: "writer", false: "reader"}[write], path, n, mine[0])
			return
		}
	}
}

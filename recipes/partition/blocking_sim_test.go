package partition_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

const bsimPath = "/bwork"

// Where a round's context ends.
const (
	endNone   = iota // it does not
	endBefore        // before Join is called
	endDuring        // while Join or Wait waits (a step or an instant drawn)
	endAfter         // just after Wait returns
	endInside        // while the member works on its items
	endGive          // while Leave runs
	numEnds
)

// given is a member given back with Leave by client's process of
// incarnation inc: a process that crashed since never ran the Leave.
type given struct {
	m           *partition.Member
	client, inc int
}

// blockingSim drives the partitioner through its Client from actors:
// each of 3 clients has one Client shared by 2 goroutines, each a member
// that loops: Join, Wait (kazoo's wait_for_acquire), a fenced write to
// each item held, a pause, Leave; each round draws where its context
// ends (nowhere, before Join, during Join or Wait, just after Wait,
// while it works, during Leave), and Leave takes that same context. A
// seed whose plan has the restart class has one aimed at the first delete
// of a give-up (a Leave's, or the background one of a Join whose context
// ended: aimRestart).
//
// Judged by: at every request, no item has two members that believe they
// hold it while their lock nodes are on the server; each report against
// the one before it (believers.report: from Acquired to Acquired only
// with the same holds) and against the server (judge.change, as
// partSim's but for the causes of what is given up: no drains here);
// each FencedHold's outcome (ErrLost only once the hold has ended:
// judge.lostWhileHeld); each item's fencing log never goes down in
// tokens, and has the writes that succeeded and none of those refused
// (fenceCounts.check); a call fails with its context's error only once
// that context has ended (ctxLasts); a Client.Leave that returns nil has
// ended the member (leftAtOnce); liveness: once the faults stop, every
// client's Wait returns Acquired again (Progress); quiescence: every
// member given back with Leave has its Done closed, and no party node or
// lock node is left, whatever the contexts; every Leave that returns nil
// has deleted the member's nodes: no party node or lock node of it made
// since its Join was called is on the server (leftBehind; as partSim's
// judge, over the nodes of the member's identifier: the two members of a
// client share its session), nor is there one when a Leave that returned
// early (its context ended) is found done by a later Leave; and no
// background work (a leave whose context ended, a withdrawn attempt's
// cleanup) reports anything but a session's end or an ACL's refusal.
type blockingSim struct {
	clients int
	mu      sync.Mutex // the actors run one at a time; the lock keeps -race quiet about the hand-offs
	live    map[*partition.Member]int
	bel     *believers
	recs    map[*partition.Member]*believer // the believers' entries of live's members
	left    []given                         // members given back with Leave
	waited  int                             // Waits that returned Acquired, summed over seeds
	entered map[int64]bool                  // tokens whose first fenced write was sent (kind "enter"), this seed
	// ids: per identifier, what its earlier members' give-ups may still
	// make or keep on the server (this seed).
	ids map[string]*idLeaves
	// Successful Leaves judged (no node of the member left), and those
	// not (a node found may be an earlier member's of the identifier,
	// still leaving on the same session), summed over seeds.
	judged, unjudged int
	// r is the seed's Trial; aim its own stream (aimStream); armed: per
	// client, its actors in a Leave or just out of a Join whose context
	// ended (its give-up left to the background); aimed: a restart was
	// aimed at a give-up's delete (aimRestart), once a seed.
	r     *sim.Trial
	aim   *rand.Rand
	armed []int
	aimed bool
	// judge holds each report to the doc (judge_test.go); fence each
	// fenced write's outcome to the logs.
	judge judge
	fence fenceCounts
}

// idLeaves is what the earlier members of one identifier, on one
// incarnation of its client, may have left for a later member's judge to
// find: a node of theirs made after that member's Join was called,
// while their give-up runs (it ends with every such node deleted, or
// with some kept by an ACL's refusal).
type idLeaves struct {
	inc     int
	running int      // give-ups whose end is not known yet (a Leave that returned early)
	undone  []int64  // the sessions of members made by a Join whose ctx ended (its give-up's end is never known)
	kept    int64    // the server's zxid when the last give-up that failed ended: its refused nodes were made before
	last    *joinRec // the last Join of the identifier
}

// joinRec is one Join of an identifier: the server's zxid when it was
// called and when the next Join of the identifier was (0 until then):
// the nodes of its member were made between the two, or after the next
// (taken for the next member's: not counted).
type joinRec struct{ at, next int64 }

var bsimItems = []string{"a", "b", "c", "d"}

// bsimStable is the members' WithStable.
const bsimStable = 100 * time.Millisecond

// bsimRegressions are partition/blocking's regression seeds. They were
// recorded before the scenario ran a Leave after one whose context ended
// (to judge the background give-up once it succeeds): they replay without
// it, the history they failed with.
var bsimRegressions = []sim.Regression{
	{Seed: 31, Why: "liveness, acl class: a member whose hold's delete an ACL refused stopped its Leave there and kept its party node (now every delete is tried)"},
	{Seed: 63, Why: "liveness, acl class: the cleanup of a withdrawn attempt could not list the closed item directory, and its node stayed until the session ended (now run again in the background)"},
}

func newBlockingSim() (*blockingSim, sim.Scenario) {
	s := &blockingSim{clients: 3}
	left := func(r *sim.Trial) error {
		for _, g := range s.left {
			select {
			case <-g.m.Done():
			default:
				if r.Incarnation(g.client) == g.inc {
					return fmt.Errorf("member %s given back with Leave, and its Done never closed", g.m.Identifier())
				}
			}
		}
		return nil
	}
	empty := func(r *sim.Trial) bool {
		if len(r.Children(bsimPath+"/party")) != 0 {
			return false
		}
		for _, it := range bsimItems {
			if len(r.Children(bsimPath+"/locks/"+it)) != 0 {
				return false
			}
		}
		return true
	}
	lost := sim.LostReplies{Rate: 0.05}
	return s, sim.Scenario{
		Name:        "partition/blocking",
		InJobEnds:   true,
		ActorLag:    true,
		OutageEnds:  true,
		Clients:     s.clients,
		Faults:      sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.01},
		ACL:         []string{bsimPath + "/party", bsimPath + "/locks"},
		Regressions: bsimRegressions,
		Counters:    itemDirs(bsimPath, bsimItems),
		Duration:    15 * time.Second,
		Wrap: func(i int, c *fakezk.Conn) task.Conn {
			return &bsimConn{Conn: c, inner: &judgedConn{Conn: c, inner: lost.Wrap(i, c), j: &s.judge, i: i}, s: s, i: i}
		},
		Server: fakezk.Config{Journal: s.judge.party.Journal},
		Setup: func(r *sim.Trial) error {
			lost.World, lost.Rand = r.World, r.Rand
			s.r, s.aim, s.armed, s.aimed = r, rand.New(rand.NewPCG(r.Seed, aimStream)), make([]int, s.clients), false
			lost.Sent = func(int, task.Request) { s.oneHolder(r) }
			s.live, s.left, s.entered, s.ids = map[*partition.Member]int{}, nil, map[int64]bool{}, map[string]*idLeaves{}
			s.bel, s.recs = newBelievers(), map[*partition.Member]*believer{}
			p, err := partition.New(bsimPath, bsimItems)
			if err != nil {
				return err
			}
			s.judge.start(r, p, bsimStable, false)
			s.fence.reset()
			for _, it := range bsimItems {
				if _, err := sim.Run(r.World, 0, zkops.EnsurePath(fenceDir+"/"+it, nil)); err != nil {
					return err
				}
			}
			return nil
		},
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.startClient(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) {
			s.mu.Lock()
			for m, c := range s.live {
				if c == i {
					s.drop(m) // the dead process's: its nodes go with its session
				}
			}
			s.mu.Unlock()
			s.startClient(r, i)
		},
		Operator:           []string{bsimPath + "/party/", bsimPath + "/locks/"},
		OwnDeletes:         []string{bsimPath + "/party", bsimPath + "/locks"},
		OperatorDeleteOnly: []string{bsimPath + "/locks/"},
		OperatorWrites:     true,
		Quiesce: func(r *sim.Trial) bool {
			return r.Actors() == 0 && empty(r) && left(r) == nil
		},
		Invariants: []sim.Invariant{
			sim.InvariantFunc(left),
			sim.InvariantFunc(func(r *sim.Trial) error {
				for _, it := range bsimItems {
					if _, err := sim.CheckFencing(r.World, fenceDir+"/"+it); err != nil {
						return err
					}
				}
				return s.fence.check(r, fenceDir, bsimItems)
			}),
			// Background work reports only what the doc says it may: a
			// session's end, and a delete an operator's ACL refused (it
			// goes on until the ACL lets it; quiescence judges the nodes).
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}
}

// aimStream seeds the scenario's own stream (blockingSim.aim), apart
// from the workload's (Trial.Rand, which the lost replies draw from too)
// and the faults': a seed that never aims a restart keeps its history.
const aimStream = 0x4c45_4156_4541_494d

// bsimConn is client i's connection: the lost replies' (inner), and a
// server restart aimed at the first delete of a give-up in the seed
// (aimRestart).
type bsimConn struct {
	*fakezk.Conn
	inner task.Conn
	s     *blockingSim
	i     int
}

func (c *bsimConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.inner.Do(req, done, watch)
	if d, ok := req.(*task.DeleteRequest); ok && !c.s.aimed && c.s.r != nil && c.s.giveUp(c.i, d.Path) {
		c.s.aimRestart(c.i)
	}
}

// giveUp reports whether a delete of path sent by client i is (most
// likely) one of a member's give-up: a party node's (only a give-up
// deletes one), or a lock node's while an actor of the client is in a
// Leave or has just had a Join fail on its context (the give-up of the
// member it may have made goes on in the background). A release or a
// withdrawn attempt of the other actor may be taken for one.
func (s *blockingSim) giveUp(i int, path string) bool {
	if strings.HasPrefix(path, bsimPath+"/party/") {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.armed[i] > 0 && strings.HasPrefix(path, bsimPath+"/locks/")
}

// aimRestart aims a server restart at the give-up's delete just sent by
// client i, once a seed, in a seed whose plan has the Restart class
// (Trial.AimRestart, drawn from the scenario's own stream): applied in
// two restarts of three, its reply lost, and every client back at the
// same instant, so that the delete's retry (a read after a sync, then
// the delete again) races the other clients' Joins and lock attempts on
// the items it gave up, where a cut of the one client would have it
// come back after they had acted.
func (s *blockingSim) aimRestart(i int) {
	if s.r.FaultsOn() {
		s.aimed = s.r.AimRestart(s.aim, i)
	}
}

// arm counts an actor of client i in a give-up (d is 1 or -1).
func (s *blockingSim) arm(i, d int) {
	s.mu.Lock()
	s.armed[i] += d
	s.mu.Unlock()
}

func (s *blockingSim) startClient(r *sim.Trial, i int) {
	c, err := partition.NewClient(r.Execs[i], bsimPath, bsimItems, partition.WithStable(bsimStable))
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	for k := range 2 {
		id := fmt.Sprintf("c%da%d", i, k)
		r.Go(i, func(a *sim.Actor) {
			for !r.Stopping() && a.Context().Err() == nil {
				s.round(r, a, c, id)
			}
		})
	}
}

// leaves returns the entry of identifier id of client i's incarnation inc,
// made anew for a new incarnation (a new session: the earlier members'
// nodes are not its own); nil for an incarnation that has ended (s.mu
// held).
func (s *blockingSim) leaves(r *sim.Trial, i, inc int, id string) *idLeaves {
	if r.Incarnation(i) != inc {
		return nil
	}
	e := s.ids[id]
	if e == nil || e.inc != inc {
		e = &idLeaves{inc: inc}
		s.ids[id] = e
	}
	return e
}

// leftClean judges a successful Leave of m (Client.Leave, or a later
// Member.Leave: every Leave succeeds once the deletes are done), joined
// by client i's incarnation inc: none of its nodes is left
// (leftBehind). A node found while an earlier member of its identifier
// may still be leaving on its session may be that one's, made after m's
// Join: then the Leave is not judged (s.mu held).
func (s *blockingSim) leftClean(r *sim.Trial, i, inc int, c *partition.Client, m *partition.Member, joined *joinRec) {
	e := s.leaves(r, i, inc, m.Identifier())
	if e == nil {
		return
	}
	left := leftBehind(r, c.Partitioner(), bsimItems, m, max(joined.at, e.kept), joined.next, true)
	switch {
	case len(left) == 0:
		s.judged++
	case e.running > 0 || slices.Contains(e.undone, m.Session().ID):
		s.unjudged++
	default:
		s.judged++
		for _, n := range left {
			r.Errorf("client %d: Leave of %s succeeded with its node %s on the server", i, m.Identifier(), n)
		}
	}
}

// drop stops judging m (s.mu held).
func (s *blockingSim) drop(m *partition.Member) {
	delete(s.live, m)
	s.bel.setLive(s.recs[m], false)
	delete(s.recs, m)
}

// oneHolder: as partSim.oneHolder, over the members the actors hold.
func (s *blockingSim) oneHolder(r *sim.Trial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range bsimItems {
		// Believers counted first, without the server: most of the time
		// at most one member holds it, and its node need not be read.
		if !s.bel.contested(it) {
			continue
		}
		n := 0
		for m := range s.live {
			if h, ok := m.Hold(it); ok {
				if st, ok := r.NodeStat(h.Path); ok && st.Czxid == h.Token {
					n++
				}
			}
		}
		if n > 1 {
			r.Errorf("item %s held by %d members at once", it, n)
		}
	}
}

// ctxLasts reports whether err is a context's end while ctx, the one
// the call was given, has not ended (Client: "When ctx ends first, a
// call returns task.ErrCanceled or task.ErrDeadlineExceeded").
func ctxLasts(ctx context.Context, err error) bool {
	return (errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrDeadlineExceeded)) && ctx.Err() == nil
}

func expectedErr(r *sim.Trial, a *sim.Actor, end int, err error) bool {
	switch {
	case errors.Is(err, task.ErrCanceled), errors.Is(err, task.ErrDeadlineExceeded):
		return end != endNone || a.Context().Err() != nil
	case r.Closing(), errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed), task.IsRetryable(err),
		errors.Is(err, partition.ErrLost), errors.Is(err, partition.ErrNotHeld):
		return true
	case errors.Is(err, task.ErrNoAuth): // an operator's ACL refuses it for a while
		return true
	}
	return false
}

// round is one join, wait, work, leave of actor a as member id.
func (s *blockingSim) round(r *sim.Trial, a *sim.Actor, c *partition.Client, id string) {
	i, rnd := a.Client(), a.Rand()
	end := endNone
	if rnd.IntN(3) > 0 {
		end = 1 + rnd.IntN(numEnds-1)
	}
	ctx, cancel := a.WithCancel(a.Context())
	defer cancel()
	switch end {
	case endBefore:
		cancel()
	case endDuring:
		var c2 context.CancelFunc
		if rnd.IntN(2) == 0 {
			ctx, c2 = a.CancelAfterSteps(ctx, rnd.IntN(12))
		} else {
			ctx, c2 = a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(2*time.Second))))
		}
		defer c2()
	}
	b := &believer{}
	inc, ex := r.Incarnation(i), r.Execs[i]
	// A Join whose ctx ends just as the member is made leaves in the
	// background, and nothing tells when that ends: the member's sessions
	// (seen from its reports, the executor's current one at each) are
	// marked for good in its identifier's entry.
	var joinFailed bool
	var sessions []int64
	var joinedM *partition.Member // the member, once Join has returned it (s.mu)
	undone := func(e *idLeaves, sess int64) {
		if e != nil && !slices.Contains(e.undone, sess) {
			e.undone = append(e.undone, sess)
		}
	}
	joined := &joinRec{at: r.Server.Zxid()}
	s.mu.Lock()
	if e := s.leaves(r, i, inc, id); e != nil {
		if e.last != nil && e.last.next == 0 {
			e.last.next = joined.at
		}
		e.last = joined
	}
	s.mu.Unlock()
	m, err := c.Join(ctx, id, func(ch partition.Change) {
		s.mu.Lock()
		for _, w := range s.judge.change(r, id, joinedM, b, ch) {
			r.Errorf("client %d: %s: report %v (Held %v, Acquired %v, Released %v): %s", i, id, ch.State, ch.Held, ch.Acquired, ch.Released, w)
		}
		w := s.bel.report(b, ch)
		sess, _ := ex.Current()
		if !slices.Contains(sessions, sess.ID) {
			sessions = append(sessions, sess.ID)
		}
		if joinFailed {
			undone(s.leaves(r, i, inc, id), sess.ID)
		}
		s.mu.Unlock()
		if w != "" {
			r.Errorf("client %d: %s", i, w)
		}
	})
	if err != nil {
		s.mu.Lock()
		joinFailed = true
		for _, sess := range sessions {
			undone(s.leaves(r, i, inc, id), sess)
		}
		s.mu.Unlock()
		if !expectedErr(r, a, end, err) || ctxLasts(ctx, err) {
			r.Errorf("client %d: join %s: %v", i, id, err)
		}
		if ctx.Err() != nil {
			// The member's give-up, if it was made, runs now.
			s.arm(i, 1)
			defer s.arm(i, -1)
		}
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return
	}
	s.mu.Lock()
	joinedM = m
	s.live[m], s.recs[m] = i, b
	s.bel.setLive(b, true)
	s.mu.Unlock()
	defer func() {
		if end == endGive {
			var gc context.CancelFunc
			ctx, gc = a.CancelAfterSteps(ctx, rnd.IntN(4))
			defer gc()
		}
		s.arm(i, 1)
		err := c.Leave(ctx, m)
		s.arm(i, -1)
		if ctxLasts(ctx, err) {
			r.Errorf("client %d: leave %s: %v", i, id, err)
		}
		if w := leftAtOnce(m); w != "" && err == nil {
			r.Errorf("client %d: after a Leave of %s that returned nil: %s", i, id, w)
		}
		if !a.Killed() {
			s.mu.Lock()
			s.drop(m)
			s.left = append(s.left, given{m, i, r.Incarnation(i)})
			s.mu.Unlock()
		}
		s.mu.Lock()
		switch {
		case err == nil:
			s.leftClean(r, i, inc, c, m, joined)
		case errors.Is(err, task.ErrCanceled), errors.Is(err, task.ErrDeadlineExceeded):
			// The give-up goes on in the background: a later Leave
			// ends with it (and succeeds once the deletes are done).
			regression := slices.ContainsFunc(bsimRegressions, func(g sim.Regression) bool { return g.Seed == r.Seed })
			if e := s.leaves(r, i, inc, id); e != nil && !a.Killed() && regression {
				e.running++ // its end is never known
			} else if e != nil && !a.Killed() {
				e.running++
				executor.Submit(ex, m.Leave(), func(_ task.Unit, err error) {
					s.mu.Lock()
					defer s.mu.Unlock()
					e := s.leaves(r, i, inc, id)
					if e == nil {
						return
					}
					e.running--
					if err != nil {
						e.kept = r.Server.Zxid()
						return
					}
					s.leftClean(r, i, inc, c, m, joined)
				})
			}
		default: // the give-up ended, some node's delete refused
			if e := s.leaves(r, i, inc, id); e != nil {
				e.kept = r.Server.Zxid()
			}
		}
		s.mu.Unlock()
		if err != nil && !expectedErr(r, a, endGive, err) {
			r.Errorf("client %d: leave %s: %v", i, id, err)
		}
	}()
	wctx, wc := a.WithTimeout(ctx, 3*time.Second)
	held, err := c.Wait(wctx, m)
	lasts := ctxLasts(wctx, err)
	wc()
	if err != nil {
		if !expectedErr(r, a, endDuring, err) || lasts {
			r.Errorf("client %d: wait %s: %v", i, id, err)
		}
		return
	}
	s.waited++
	r.Progress(i)
	switch end {
	case endAfter:
		cancel()
	case endInside:
		var sc context.CancelFunc
		ctx, sc = a.CancelAfterSteps(ctx, rnd.IntN(10))
		defer sc()
	}
	for _, h := range held {
		// A hold's first write enters (sim.CheckFencing: no token enters
		// after another entry of its own; tokens strictly increase from
		// one holder of an item to the next).
		kind := "w"
		s.mu.Lock()
		if !s.entered[h.Token] {
			s.entered[h.Token], kind = true, "enter"
		}
		s.mu.Unlock()
		// The write is h's (its token): fenced by h, not by the member's
		// hold of the item when it runs, which a goroutine that runs
		// late (ActorLag) may find to be a later one.
		s.mu.Lock()
		s.fence.send(h.Token)
		s.mu.Unlock()
		_, err := c.FencedHold(ctx, m, h, sim.FencedEntry(fenceDir+"/"+h.Item, h.Token, kind))
		s.mu.Lock()
		s.fence.done(h.Token, err)
		lost := s.judge.lostWhileHeld(r, m, h, err)
		s.mu.Unlock()
		if err != nil && !expectedErr(r, a, endInside, err) || ctxLasts(ctx, err) {
			r.Errorf("client %d: fenced write %s on %s: %v", i, id, h.Item, err)
		}
		if lost != "" {
			r.Errorf("client %d: %s: %s", i, id, lost)
		}
	}
	_ = a.Sleep(ctx, time.Duration(100+rnd.Int64N(900))*time.Millisecond)
}

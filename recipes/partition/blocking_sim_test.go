package partition_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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

// blockingSim drives the partitioner through its Client from actors:
// each of 3 clients has one Client shared by 2 goroutines, each a member
// that loops: Join, Wait (kazoo's wait_for_acquire), a fenced write to
// each item held, a pause, Leave; each round draws where its context
// ends (nowhere, before Join, during Join or Wait, just after Wait,
// while it works, during Leave), and Leave takes that same context.
//
// Judged by: at every request, no item has two members that believe they
// hold it while their lock nodes are on the server; each item's fencing
// log never goes down in tokens; liveness: once the faults stop, every
// client's Wait returns Acquired again (Progress); quiescence: every
// member given back with Leave has its Done closed, and no party node or
// lock node is left, whatever the contexts; and no background work (a
// leave whose context ended, a withdrawn attempt's cleanup) reports
// anything but a session's end or an ACL's refusal.
// given is a member given back with Leave by client's process of
// incarnation inc: a process that crashed since never ran the Leave.
type given struct {
	m           *partition.Member
	client, inc int
}

type blockingSim struct {
	clients int
	mu      sync.Mutex // the actors run one at a time; the lock keeps -race quiet about the hand-offs
	live    map[*partition.Member]int
	bel     *believers
	recs    map[*partition.Member]*believer // the believers' entries of live's members
	left    []given                         // members given back with Leave
	waited  int                             // Waits that returned Acquired, summed over seeds
	entered map[int64]bool                  // tokens whose first fenced write was sent (kind "enter"), this seed
}

var bsimItems = []string{"a", "b", "c", "d"}

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
		Name:       "partition/blocking",
		InJobEnds:  true,
		ActorLag:   true,
		OutageEnds: true,
		Clients:    s.clients,
		Faults:     sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.01},
		ACL:        []string{bsimPath + "/party", bsimPath + "/locks"},
		Regressions: []sim.Regression{
			{Seed: 31, Why: "liveness, acl class: a member whose hold's delete an ACL refused stopped its Leave there and kept its party node (now every delete is tried)"},
			{Seed: 63, Why: "liveness, acl class: the cleanup of a withdrawn attempt could not list the closed item directory, and its node stayed until the session ended (now run again in the background)"},
		},
		Counters: itemDirs(bsimPath, bsimItems),
		Duration: 15 * time.Second,
		Wrap:     lost.Wrap,
		Setup: func(r *sim.Trial) error {
			lost.World, lost.Rand = r.World, r.Rand
			lost.Sent = func(int, task.Request) { s.oneHolder(r) }
			s.live, s.left, s.entered = map[*partition.Member]int{}, nil, map[int64]bool{}
			s.bel, s.recs = newBelievers(), map[*partition.Member]*believer{}
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
				return nil
			}),
			// Background work reports only what the doc says it may: a
			// session's end, and a delete an operator's ACL refused (it
			// goes on until the ACL lets it; quiescence judges the nodes).
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}
}

func (s *blockingSim) startClient(r *sim.Trial, i int) {
	c, err := partition.NewClient(r.Execs[i], bsimPath, bsimItems, partition.WithStable(100*time.Millisecond))
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
	m, err := c.Join(ctx, id, func(ch partition.Change) {
		s.mu.Lock()
		w := s.bel.report(b, ch)
		s.mu.Unlock()
		if w != "" {
			r.Errorf("client %d: %s", i, w)
		}
	})
	if err != nil {
		if !expectedErr(r, a, end, err) {
			r.Errorf("client %d: join %s: %v", i, id, err)
		}
		_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		return
	}
	s.mu.Lock()
	s.live[m], s.recs[m] = i, b
	s.bel.setLive(b, true)
	s.mu.Unlock()
	defer func() {
		if end == endGive {
			var gc context.CancelFunc
			ctx, gc = a.CancelAfterSteps(ctx, rnd.IntN(4))
			defer gc()
		}
		err := c.Leave(ctx, m)
		if !a.Killed() {
			s.mu.Lock()
			s.drop(m)
			s.left = append(s.left, given{m, i, r.Incarnation(i)})
			s.mu.Unlock()
		}
		if err != nil && !expectedErr(r, a, endGive, err) {
			r.Errorf("client %d: leave %s: %v", i, id, err)
		}
	}()
	wctx, wc := a.WithTimeout(ctx, 3*time.Second)
	held, err := c.Wait(wctx, m)
	wc()
	if err != nil {
		if !expectedErr(r, a, endDuring, err) {
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
		if _, err := c.FencedHold(ctx, m, h, sim.FencedEntry(fenceDir+"/"+h.Item, h.Token, kind)); err != nil && !expectedErr(r, a, endInside, err) {
			r.Errorf("client %d: fenced write %s on %s: %v", i, id, h.Item, err)
		}
	}
	_ = a.Sleep(ctx, time.Duration(100+rnd.Int64N(900))*time.Millisecond)
}

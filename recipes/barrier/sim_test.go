package barrier_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// dropCreate is the chance that a create's reply is lost (the connection
// drops just after it is sent, the create applied or not).
const dropCreate = 0.1

var seedFlag = flag.Uint64("barrier.seed", 0, "run the simulations with this seed only")

// simSeeds returns the seeds each simulation runs: 1..100 (1..20 with
// -short), or the one given with -barrier.seed.
func simSeeds() (first, last uint64) {
	if *seedFlag != 0 {
		return *seedFlag, *seedFlag
	}
	if testing.Short() {
		return 1, 20
	}
	return 1, 100
}

// doubleStats is what one double-barrier simulation did.
type doubleStats struct {
	counts
	entered, left int
}

// simDouble runs rounds of a double barrier for n of 4 clients under the
// faults drawn from the seed. Each round has a directory of its own; each
// client arrives after a drawn delay, enters, works for a drawn time,
// leaves, and goes on to the next round; a flow that fails with session
// expiry runs again on the next session. The judges:
//
//   - when anyone passes Enter, at least n distinct clients have started
//     Enter in that round;
//   - when anyone returns from Leave, the node of every participant that
//     had passed Enter before that Leave started is gone from the server
//     (each of them has left, or its session has ended);
//   - every flow ends (nothing is stuck), and at the end no participant
//     node is left on the server and no cleanup failed.
//
// It returns the first violation, naming the seed.
func simDouble(seed uint64) (doubleStats, error) {
	const clients, n, rounds = 4, 3, 3
	var st doubleStats
	w, err := newWorld(seed, clients, faults, dropCreate, &st.counts)
	if err != nil {
		return st, err
	}
	defer w.Close()
	rng := rand.New(rand.NewPCG(seed, 2))
	var violation error
	fail := func(format string, args ...any) {
		if violation == nil {
			violation = fmt.Errorf("seed %d: "+format, append([]any{seed}, args...)...)
		}
	}
	type round struct {
		d       *barrier.DoubleBarrier
		started map[int]bool
		passed  []string // nodes of the participants that passed Enter, in order
	}
	rs := make([]*round, rounds)
	for r := range rs {
		d, err := barrier.NewDouble(fmt.Sprintf("/db/r%d", r), n)
		if err != nil {
			return st, err
		}
		rs[r] = &round{d: d, started: map[int]bool{}}
	}
	finished, halt := 0, false
	var play func(i, r int)
	play = func(i, r int) {
		if halt {
			return
		}
		if r == rounds {
			finished++
			return
		}
		ex, rd := w.Execs[i], rs[r]
		after(ex, draw(rng, 8*time.Second), func() {
			if halt {
				return
			}
			rd.started[i] = true
			across(ex, rd.d.Enter(), &st.counts, func(p *barrier.Participant, err error) {
				if halt {
					return
				}
				if err != nil {
					fail("client %d round %d: enter: %v", i, r, err)
					return
				}
				st.entered++
				if len(rd.started) < n {
					fail("client %d passed Enter of round %d when only %d of %d had arrived", i, r, len(rd.started), n)
				}
				rd.passed = append(rd.passed, p.Path())
				after(ex, draw(rng, 3*time.Second), func() {
					if halt {
						return
					}
					before := append([]string(nil), rd.passed...)
					across(ex, p.Leave(), &st.counts, func(_ task.Unit, err error) {
						if halt {
							return
						}
						if err != nil {
							fail("client %d round %d: leave: %v", i, r, err)
							return
						}
						st.left++
						for _, path := range before {
							if _, ok := w.Server.NodeStat(path); ok {
								fail("client %d finished Leave of round %d while participant %s is still there", i, r, path)
							}
						}
						play(i, r+1)
					})
				})
			})
		})
	}
	for i := range clients {
		play(i, 0)
	}
	ok := w.Settle(func() bool { return finished == clients || violation != nil })
	if violation != nil {
		halt = true
		return st, violation
	}
	if !ok {
		halt = true
		var nodes []string
		for _, rd := range rs {
			for _, name := range participantNodes(w, rd.d.Dir()) {
				nodes = append(nodes, rd.d.Dir()+"/"+name)
			}
		}
		return st, fmt.Errorf("seed %d: stuck: %d of %d clients finished; participant nodes on the server: %v", seed, finished, clients, nodes)
	}
	for _, rd := range rs {
		if left := participantNodes(w, rd.d.Dir()); len(left) > 0 {
			halt = true
			return st, fmt.Errorf("seed %d: orphan participant nodes in %s: %v", seed, rd.d.Dir(), left)
		}
	}
	halt = true
	return st, checkErrs(w)
}

// barrierStats is what one barrier simulation did.
type barrierStats struct {
	counts
	held, passed int
}

// simBarrier runs rounds of a barrier: client 0 sets it, changes its data
// a few times (each change wakes every waiter's watch) and removes it;
// clients 1-3 wait for it, starting at drawn times. The judge: whenever a
// Wait returns, the barrier node is not on the server (in a round the node
// is never set again after its removal); every flow ends.
func simBarrier(seed uint64) (barrierStats, error) {
	const clients, rounds, updates = 4, 3, 3
	var st barrierStats
	w, err := newWorld(seed, clients, faults, dropCreate, &st.counts)
	if err != nil {
		return st, err
	}
	defer w.Close()
	rng := rand.New(rand.NewPCG(seed, 1))
	var violation error
	fail := func(format string, args ...any) {
		if violation == nil {
			violation = fmt.Errorf("seed %d: "+format, append([]any{seed}, args...)...)
		}
	}
	finished, halt := false, false
	var round func(r int)
	round = func(r int) {
		if halt {
			return
		}
		if r == rounds {
			finished = true
			return
		}
		b, err := barrier.New(fmt.Sprintf("/b/r%d", r))
		if err != nil {
			fail("%v", err)
			return
		}
		ctl := w.Execs[0]
		waiting := clients - 1
		removed := false
		next := func() {
			if waiting == 0 && removed {
				round(r + 1)
			}
		}
		across(ctl, b.Set([]byte("up")), &st.counts, func(_ task.Unit, err error) {
			if halt {
				return
			}
			if err != nil {
				fail("round %d: set: %v", r, err)
				return
			}
			for i := 1; i < clients; i++ {
				after(w.Execs[i], draw(rng, 4*time.Second), func() {
					if halt {
						return
					}
					if _, up := w.Server.NodeStat(b.Path()); up {
						st.held++
					}
					across(w.Execs[i], b.Wait(), &st.counts, func(_ task.Unit, err error) {
						if halt {
							return
						}
						if err != nil {
							fail("client %d round %d: wait: %v", i, r, err)
							return
						}
						if _, up := w.Server.NodeStat(b.Path()); up {
							fail("client %d passed the barrier of round %d while it is up", i, r)
							return
						}
						st.passed++
						waiting--
						next()
					})
				})
			}
			var update func(u int)
			update = func(u int) {
				if halt {
					return
				}
				if u == updates {
					across(ctl, b.Remove(), &st.counts, func(_ task.Unit, err error) {
						if halt {
							return
						}
						if err != nil {
							fail("round %d: remove: %v", r, err)
							return
						}
						removed = true
						next()
					})
					return
				}
				after(ctl, time.Second+draw(rng, 2*time.Second), func() {
					set := c.Retry(task.Set(b.Path(), fmt.Appendf(nil, "update %d", u), task.AnyVersion), c.Policy{})
					across(ctl, set, &st.counts, func(_ task.Stat, err error) {
						if halt {
							return
						}
						if err != nil {
							fail("round %d: update: %v", r, err)
							return
						}
						update(u + 1)
					})
				})
			}
			update(0)
		})
	}
	round(0)
	ok := w.Settle(func() bool { return finished || violation != nil })
	halt = true
	if violation != nil {
		return st, violation
	}
	if !ok {
		return st, fmt.Errorf("seed %d: stuck", seed)
	}
	return st, checkErrs(w)
}

func TestDoubleBarrierSimulation(t *testing.T) {
	var total doubleStats
	first, last := simSeeds()
	seeds := last - first + 1
	for seed := first; seed <= last; seed++ {
		st, err := simDouble(seed)
		if err != nil {
			t.Fatalf("%v\nreplay: go test ./recipes/barrier -run TestDoubleBarrierSimulation -barrier.seed=%d -v", err, seed)
		}
		total.entered += st.entered
		total.left += st.left
		total.losses += st.losses
		total.expiries += st.expiries
	}
	t.Logf("%d seeds: %d enters, %d leaves, %d connection-loss responses, %d flows run again after expiry",
		seeds, total.entered, total.left, total.losses, total.expiries)
	if total.losses == 0 || total.expiries == 0 {
		t.Fatal("the drawn faults never bit: the test checks nothing")
	}
}

func TestBarrierSimulation(t *testing.T) {
	var total barrierStats
	first, last := simSeeds()
	seeds := last - first + 1
	for seed := first; seed <= last; seed++ {
		st, err := simBarrier(seed)
		if err != nil {
			t.Fatalf("%v\nreplay: go test ./recipes/barrier -run TestBarrierSimulation -barrier.seed=%d -v", err, seed)
		}
		total.held += st.held
		total.passed += st.passed
		total.losses += st.losses
		total.expiries += st.expiries
	}
	t.Logf("%d seeds: %d waits passed (%d began while the barrier was up), %d connection-loss responses, %d flows run again after expiry",
		seeds, total.passed, total.held, total.losses, total.expiries)
	if total.held == 0 || total.losses == 0 || total.expiries == 0 {
		t.Fatal("the simulation never held a waiter or the faults never bit: the test checks nothing")
	}
}

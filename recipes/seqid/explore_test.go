package seqid_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// explore is the sequence scenario for fakezk/sim: three clients draw one
// ID at a time, two with Next and one with a Counter (their calls form the
// history checked for linearizability), one draws from an Allocator's blocks and one
// reserves blocks of 3, all in loops with a think time, under every fault
// class but Wipe and Operator (a sequence does not survive the loss of its
// node), and the acl class on the node (a draw refused with task.ErrNoAuth
// hands out nothing, and the loop draws again). No ID
// is handed out twice, the history of Next calls is linearizable, no ID is
// above the node's value at the end, and every client draws again once the
// faults stop.
type explore struct {
	nexts   []task.Task[int64] // per client: what it draws IDs with
	loop    func(i int)
	ids     *sim.IDs
	stopped int
	drawn   int // summed over seeds
	unknown int
	refused int // draws an operator's ACL refused (task.ErrNoAuth)
}

const exploreClients = 5

func newExplore() (sim.Scenario, *explore) {
	e := &explore{}
	return sim.Scenario{
		Name:    "seqid",
		Clients: exploreClients,
		// Not the operator: the node is the sequence; deleting it loses
		// it, as a wipe does. Its ACL, yes: draws refused for a while,
		// and no ID handed out twice after.
		Faults:   sim.Faults{Allow: sim.AllFaults&^sim.Of(sim.Operator) | sim.Of(sim.ACL)},
		ACL:      []string{path},
		Duration: 10 * time.Second,
		Setup: func(r *sim.Trial) error {
			e.ids, e.stopped = sim.NewIDs(), 0
			return seqid.NearVersionWrap(r, path)
		},
		Workload: e.workload,
		// A crashed process's call in progress may have taken an ID (a
		// gap); the counter's and the allocator's reserved blocks die
		// with it: the new process builds its own.
		Restart: func(r *sim.Trial, i int) {
			e.ids.Unknown(i)
			switch i {
			case 2:
				counter, err := seqid.NewCounter(path)
				if err != nil {
					r.Errorf("%v", err)
					return
				}
				e.nexts[i] = counter.Next()
			case 3:
				alloc, err := seqid.NewAllocator(path, 5)
				if err != nil {
					r.Errorf("%v", err)
					return
				}
				e.nexts[i] = alloc.Next()
			}
			e.loop(i)
		},
		Quiesce: func(*sim.Trial) bool { return e.stopped == exploreClients },
		Invariants: []sim.Invariant{
			sim.InvariantFunc(func(*sim.Trial) error { return e.ids.Linearizable() }),
			sim.InvariantFunc(e.belowNode),
		},
	}, e
}

func (e *explore) workload(r *sim.Trial) {
	alloc, err := seqid.NewAllocator(path, 5)
	if err != nil {
		r.Errorf("%v", err)
		return
	}
	block := task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { // a block of 3, keeping the last
		task.Run(s, seqid.Reserve(path, 3), func(b seqid.Block, err error) {
			if err == nil {
				for id := b.First; id < b.Last; id++ {
					r.Check(e.ids.Add(4, id))
				}
			}
			k(b.Last, err)
		})
	})
	counter, err := seqid.NewCounter(path)
	if err != nil {
		r.Errorf("%v", err)
		return
	}
	e.nexts = []task.Task[int64]{seqid.Next(path), seqid.Next(path), counter.Next(), alloc.Next(), block}
	nexts := e.nexts
	var loop func(i int)
	e.loop = func(i int) { loop(i) }
	loop = func(i int) {
		if r.Stopping() || r.Closing() {
			e.stopped++
			return
		}
		linear := i < 3
		if linear {
			e.ids.Call(i)
		}
		think := c.Sleep(time.Duration(r.Rand.Int64N(int64(100 * time.Millisecond))))
		var began time.Time // when the draw began, for the seed's picture
		mark := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) { began = s.Now(); k(task.Unit{}, nil) })
		executor.Submit(r.Execs[i], c.Seq(think, c.Seq(mark, nexts[i])), func(id int64, err error) {
			if err == nil && r.Recording() {
				r.Span(i, "id", "id "+strconv.FormatInt(id, 10), began, r.Clock.Now())
			}
			switch {
			case err == nil && linear:
				r.Check(e.ids.Return(i, id))
				r.Progress(i)
				e.drawn++
			case err == nil:
				r.Check(e.ids.Add(i, id))
				r.Progress(i)
				e.drawn++
			case errors.Is(err, task.ErrSessionExpired):
				e.ids.Unknown(i) // the write may have been applied: a gap
				e.unknown++
			case errors.Is(err, task.ErrNoAuth):
				// An operator's ACL refuses the draw for a while: nothing
				// handed out (recorded as a call that hands out nothing).
				e.ids.Unknown(i)
				e.refused++
			case r.Closing():
				return
			default:
				r.Errorf("client %d: %v", i, err)
			}
			loop(i)
		})
	}
	for i := range exploreClients {
		loop(i)
	}
}

// belowNode: no ID handed out is above the node's value, as the server
// holds it (a client's read could come from a member that lags).
func (e *explore) belowNode(r *sim.Trial) error {
	data, _, ok := r.NodeData(path)
	if !ok {
		return errors.New(path + " is gone")
	}
	v, err := seqid.Decode(data)
	if err != nil {
		return err
	}
	if e.ids.Max() > v {
		return errors.New("id " + strconv.FormatInt(e.ids.Max(), 10) + " above the node's value " + strconv.FormatInt(v, 10))
	}
	return nil
}

// The scenario over seeds: every fault class fires somewhere, calls end
// with an unknown outcome (the faults bite), and nothing fails.
func TestExplore(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 20
	}
	sc, e := newExplore()
	st := sim.Check(t, sc, n)
	if st.Failures() > 0 {
		return
	}
	t.Logf("%d ids drawn, %d calls with an unknown outcome, %d refused by an ACL", e.drawn, e.unknown, e.refused)
	if e.unknown == 0 || e.drawn == 0 {
		t.Error("no call ended with an unknown outcome: the faults never bit")
	}
	for _, cl := range sim.Classes() {
		if sc.Faults.Allow.Has(cl) && st.Fired[cl] == 0 {
			t.Errorf("fault class %s never fired", cl)
		}
	}
}

// Each known bug, switched back on, is caught by the scenario within
// 500 seeds, in each of 5 hunts over disjoint seed ranges.
func TestCanaries(t *testing.T) {
	for _, name := range seqid.Canaries {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			sc, _ := newExplore()
			sim.Catch(t, sc, string(name), 5, 500)
		})
	}
}

// Two runs of the same seed have the same history, byte for byte.
func TestSimDeterminism(t *testing.T) {
	sc, _ := newExplore()
	sim.Determinism(t, sc, sim.Sample(10, 1000))
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	sc, _ := newExplore()
	sim.Explore(t, sc)
}

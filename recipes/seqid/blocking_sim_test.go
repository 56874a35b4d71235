package seqid

// The blocking face under the simulation: several goroutines on one
// Client. In the package itself (not seqid_test) so that its
// TestSimExplore and TestSimDeterminism run beside those of
// explore_test.go under the names make sim selects.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

const bsimPath = "/bseq"

// blockingSim: 3 clients, each with one Client (blocks of 4 on clients 0
// and 1, one ID at a time on client 2) called by 3 goroutines at once,
// each looping: draw whether its context ends (at a step or an instant of
// the clock, while the call waits for a block another goroutine
// reserves, or its own; or before the call), call Next, think a while.
//
// Judged by: no ID handed out twice across every Client and process
// (sim.IDs.Add), none above the node's value at the end; per Client, the history of its goroutines' calls is
// linearizable against a counter with gaps (the doc: IDs returned to
// calls that do not overlap in time increase); each call's error, by
// Client.Next's doc (nextRules: never a session expiry, after which Next
// tries again on the next session, nor a connection loss or "not sent",
// after which the round starts again; its context's error only once its
// context has ended, and of its kind); a call made with a context that
// had ended returns that context's error at once, waiting for nothing
// (counted by sim.BeginCallCounted: not for a block another goroutine
// reserves); every client
// draws again once the faults stop.
type blockingSim struct {
	clients int
	all     *sim.IDs   // every ID handed out
	per     []*sim.IDs // per Client (a process's), its goroutines' calls
	checked []*sim.IDs // the Clients of processes that crashed
	drawn   int
	ended   int
	shared  int // calls that waited for a block another goroutine reserved
	// The errors of calls judged (nextRules), and the calls made with a
	// context that had ended judged at once.
	errsJudged, atOnceJudged int
}

func newBlockingSim() (*blockingSim, sim.Scenario) {
	s := &blockingSim{clients: 3}
	return s, sim.Scenario{
		Name:       "seqid/blocking",
		InJobEnds:  true,
		ActorLag:   true,
		OutageEnds: true,
		Clients:    s.clients,
		// Not the operator: the node is the sequence. Its ACL, yes: a
		// Next refused for a while, and no ID handed out twice after.
		Faults:   sim.Faults{Allow: sim.AllFaults&^sim.Of(sim.Operator) | sim.Of(sim.ACL)},
		ACL:      []string{bsimPath},
		Duration: 10 * time.Second,
		Setup: func(r *sim.Trial) error {
			s.all, s.per, s.checked = sim.NewIDs(), make([]*sim.IDs, s.clients), nil
			return nearVersionWrap(r, bsimPath)
		},
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.start(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) {
			s.checked = append(s.checked, s.per[i])
			s.start(r, i)
		},
		Quiesce: func(r *sim.Trial) bool { return r.Actors() == 0 },
		Invariants: []sim.Invariant{sim.InvariantFunc(func(r *sim.Trial) error {
			for i, ids := range append(append([]*sim.IDs(nil), s.checked...), s.per...) {
				if err := ids.Linearizable(); err != nil {
					return fmt.Errorf("the calls of one Client (%d): %w", i, err)
				}
			}
			return nil
		}), sim.InvariantFunc(func(r *sim.Trial) error {
			// Every ID handed out is at most the node's value, as the
			// server holds it: a block is reserved before its IDs go.
			data, _, ok := r.NodeData(bsimPath)
			if !ok {
				return fmt.Errorf("%s is gone", bsimPath)
			}
			v, err := Decode(data)
			if err != nil {
				return err
			}
			if m := s.all.Max(); m > v {
				return fmt.Errorf("id %d handed out, above the node's value %d", m, v)
			}
			return nil
		})},
	}
}

// nearVersionWrap, on one seed in two (drawn on a stream of its own),
// creates the sequence node at path and sets its data version to within
// 40 writes of int32's maximum, as after two billion draws: the run's
// compare-and-sets take the version past it, to int32's minimum and on
// through negative versions (a Counter's remembered version, a round's
// version read, a block's). What the judges then see is what they see
// below the wrap: no ID handed out twice, none above the node's value,
// no error the doc does not name (a version refused as wrapped before it
// is -1 is one).
func nearVersionWrap(r *sim.Trial, path string) error {
	rng := rand.New(rand.NewPCG(r.Seed, 0x5645_5257_5241_5021))
	if rng.IntN(2) != 0 {
		return nil
	}
	if _, err := sim.Run(r.World, 0, task.Create(path, Encode(0), task.Persistent)); err != nil {
		return err
	}
	return r.SetCounters(path, math.MaxInt32-int32(rng.IntN(40)), 0)
}

func (s *blockingSim) start(r *sim.Trial, i int) {
	size := int64(4)
	if i == 2 {
		size = 1
	}
	g, err := NewClient(r.Execs[i], bsimPath, size)
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	ids := sim.NewIDs()
	s.per[i] = ids
	for range 3 {
		r.Go(i, func(a *sim.Actor) {
			for !r.Stopping() && a.Context().Err() == nil {
				s.draw(r, a, g, ids)
			}
		})
	}
}

func (s *blockingSim) draw(r *sim.Trial, a *sim.Actor, g *Client, ids *sim.IDs) {
	i, rnd := a.Client(), a.Rand()
	ctx := a.Context()
	ends := rnd.IntN(4) == 0
	if ends {
		var cancel func()
		switch rnd.IntN(5) {
		case 0: // before the call
			ctx, cancel = a.WithCancel(ctx)
			cancel()
		case 1, 2:
			ctx, cancel = a.CancelAfterSteps(ctx, rnd.IntN(8))
		default:
			ctx, cancel = a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(time.Second))))
		}
		defer cancel()
	}
	g.mu.Lock()
	if g.filling != nil {
		s.shared++
	}
	g.mu.Unlock()
	ids.Call(a.ID())
	call, cctx := sim.BeginCallCounted(r, a, ctx)
	id, err := g.Next(cctx)
	if call.Judge("actor "+strconv.Itoa(a.ID())+": Next", err, nextRules) {
		s.atOnceJudged++
	}
	if err != nil {
		ids.Unknown(a.ID())
		s.errsJudged++
		if isCtxErr(err) {
			s.ended++
		}
	} else {
		s.drawn++
		r.Check(ids.Return(a.ID(), id))
		r.Check(s.all.Add(a.ID(), id))
		r.Progress(i)
	}
	_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(50*time.Millisecond))))
}

// nextRules are the rules of Next beyond sim.Call's (sim.Call.Judge,
// Client.Next): an operator's ACL refusing the read or the write (the
// recipe fails: nothing a retry settles). Never task.ErrSessionExpired
// (Next tries again on the next session: nothing was handed out), nor a
// connection loss or "not sent" (a round starts again after them), nor
// the recipe's own failures, which this node never gives (no one else
// writes it, and its version, near int32's maximum in one seed in two,
// wraps to int32's minimum, far from -1). With a context that had ended,
// it fails at once with that context's error, waiting for nothing (an ID
// of the block in hand stays for a later call).
var nextRules = sim.CallRules{May: []error{task.ErrNoAuth}}

// isCtxErr reports whether err is a context's end as a blocking call
// returns it: task.ErrCanceled or task.ErrDeadlineExceeded.
func isCtxErr(err error) bool {
	return errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrDeadlineExceeded)
}

func TestBlockingSimulation(t *testing.T) {
	s, sc := newBlockingSim()
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	if st := sim.Check(t, sc, seeds); st.Failures() > 0 {
		return
	}
	t.Logf("%d IDs drawn, %d calls ended by their context, %d calls waited for another goroutine's block; %d errors of calls judged, %d calls made with a context that had ended judged", s.drawn, s.ended, s.shared, s.errsJudged, s.atOnceJudged)
	if s.drawn == 0 || s.ended == 0 || s.shared == 0 || s.errsJudged == 0 || s.atOnceJudged == 0 {
		t.Fatal("the goroutines never shared a block, no context ended, no error judged or no call made with a context that had ended: the scenario checks nothing")
	}
}

// The same seed replays the same history, actors included.
func TestSimDeterminism(t *testing.T) {
	_, sc := newBlockingSim()
	sim.Determinism(t, sc, sim.Sample(6, 1000))
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newBlockingSim()
	sim.Explore(t, sc)
}

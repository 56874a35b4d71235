package idpersist_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// memStores is a Stores in memory, shared by the replicas of one run:
// one memStore per name (a Store below its mark is a violation, as in
// the idpersist scenario) and the set of live names.
type memStores struct {
	r     *sim.Trial
	marks map[string]*memStore
	live  map[string]bool
}

func (m *memStores) mark(name string) *memStore {
	st := m.marks[name]
	if st == nil {
		st = &memStore{r: m.r}
		m.marks[name] = st
	}
	return st
}

func (m *memStores) Mark(name string) (idpersist.Store, error) { return m.mark(name), nil }
func (m *memStores) Register(name string) error                { m.live[name] = true; return nil }
func (m *memStores) Retire(name string) error                  { delete(m.live, name); return nil }

// Names lists the live names sorted (map order would make a seed's
// history differ between runs).
func (m *memStores) Names() ([]string, error) {
	var out []string
	for n := range m.live {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// parentSim is the many-sequences scenario ("idpersist/parent"): three
// replicas (clients 0-2) run for leader with Config.Parent set, serving
// every child of /ids/seqs as a sequence of its own (limits under
// /ids/limits, marks in a Stores in memory shared by the run); two
// generators (clients 3-4) draw IDs in loops, each draw from one of the
// seed's 2 or 3 names picked at random. A user (the remover, on client
// 4's executor) now and then while the faults are on removes a name
// (deletes its node) and, 0 to 300 ms later, creates it again holding 0,
// as a user reusing a name would; a cycle begun is always finished (the
// name made again), after the faults too. While the faults are on, in a
// seed whose plan has the Delay class, one generator multi in four is
// late on the network: its client's connection sends it (and anything
// sent after it, in order) 10 ms to 1.5 s later, its session alive, so
// that a generator's write read in one life of a name may land in the
// next. Every other fault class is allowed as in the idpersist scenario
// (the counter classes on the election directory, ACLs on everything
// under /ids, the operator on candidates and the deposer), and Wipe: the
// leader restores every live name from its mark; a name retired, or
// made again but not yet registered, when the data went stays gone, and
// once the faults stop the user makes every missing name again, holding
// 0 (raised to its kept mark by the leader).
//
// Judged, per name across all its lives: no ID handed out twice, the
// draws linearizable (a name made again is raised to its kept mark, so
// its IDs stay above every earlier one), every ID at or below the name's
// durable mark when handed out, and the limit node at or below the mark
// at the end; no mark ever goes down; a candidate deleted only by its
// own session, the server or an operator (the deposer, on client 3);
// and, once the faults stop, both generators draw again and every name
// has been drawn from again.
type parentSim struct {
	cfg    idpersist.Config
	r      *sim.Trial
	stores *memStores
	names  []string
	ids    map[string]*sim.IDs
	// inCall: the name each generator's call in progress draws from.
	inCall map[int]string
	// after: names drawn from since the faults stopped.
	after   map[string]bool
	stopped int
	// toMake: the names the remover is to make again (the one it
	// deleted, or, once the faults stop, every name); restored: that
	// last pass has begun.
	toMake   []string
	restored bool
	// summed over seeds
	drawn, cycles, late, refused int

	startReplica func(i int)
}

// remover is the client whose executor the remover (a user) runs on.
const remover = replicas + 1

func newParentSim() (sim.Scenario, *parentSim) {
	p := &parentSim{}
	return sim.Scenario{
		Name:    "idpersist/parent",
		Clients: replicas + generators,
		Wrap: func(i int, conn *fakezk.Conn) task.Conn {
			if i < replicas {
				return conn
			}
			return &lateConn{Conn: conn, p: p, i: i}
		},
		Faults:   sim.Faults{Allow: sim.AllFaults | sim.Of(sim.Wipe) | sim.CounterFaults | sim.Of(sim.ACL)},
		ACL:      []string{"/ids"},
		Counters: []string{"/ids/election"},
		Duration: 10 * time.Second,
		Setup: func(r *sim.Trial) error {
			p.r, p.stopped, p.toMake, p.restored = r, 0, nil, false
			p.stores = &memStores{r: r, marks: map[string]*memStore{}, live: map[string]bool{}}
			p.names = []string{"a", "b", "c"}[:2+r.Rand.IntN(2)]
			p.ids, p.inCall, p.after = map[string]*sim.IDs{}, map[int]string{}, map[string]bool{}
			for _, n := range p.names {
				p.ids[n] = sim.NewIDs()
			}
			p.cfg = idpersist.Config{Parent: "/ids/seqs", Limits: "/ids/limits", Election: "/ids/election",
				Stores: p.stores, Chunk: 10, LowWater: 3}
			mk := c.Seq(task.Create("/ids", nil, task.Persistent), task.Create(p.cfg.Parent, nil, task.Persistent))
			for _, n := range p.names {
				mk = c.Seq(mk, task.Create(p.cfg.Parent+"/"+n, seqid.Encode(0), task.Persistent))
			}
			_, err := sim.Run(r.World, 0, mk)
			return err
		},
		Workload: p.workload,
		// A crashed replica is replaced by a new one; a crashed
		// generator's call in progress may have taken an ID; the remover
		// goes on (finishing its cycle) in the new process of its client.
		Restart: func(r *sim.Trial, i int) {
			if i < replicas {
				p.startReplica(i)
				return
			}
			if n, ok := p.inCall[i]; ok {
				p.ids[n].Unknown(i)
				delete(p.inCall, i)
			}
			p.loop(i)
			if i == remover {
				p.remove(r)
			}
		},
		Operator:        []string{"/ids/election/"},
		OwnDeletes:      []string{"/ids/election"},
		OperatorClients: []int{replicas},
		Live: func(r *sim.Trial) bool {
			if !r.ProgressedSinceFaults(replicas) || !r.ProgressedSinceFaults(replicas+1) {
				return false
			}
			for _, n := range p.names {
				if !p.after[n] {
					return false
				}
			}
			return true
		},
		Quiesce: func(*sim.Trial) bool { return p.stopped == generators && p.restored && len(p.toMake) == 0 },
		Invariants: []sim.Invariant{
			sim.InvariantFunc(func(*sim.Trial) error {
				for _, n := range p.names {
					if err := p.ids[n].Linearizable(); err != nil {
						return fmt.Errorf("%s: %w", n, err)
					}
				}
				return nil
			}),
			sim.InvariantFunc(p.limitsBelowMarks),
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}, p
}

func (p *parentSim) workload(r *sim.Trial) {
	p.startReplica = replicaStarter(r, p.cfg, &p.refused)
	for i := range replicas {
		p.startReplica(i)
	}
	for i := replicas; i < replicas+generators; i++ {
		p.loop(i)
	}
	p.remove(r)
	if r.Plan.On != 0 && r.Rand.IntN(2) == 0 {
		(&explore{cfg: p.cfg}).depose(r, replicas)
	}
}

// drawTimeout bounds a draw: one from a name removed (and, after a wipe,
// maybe never made again) waits for its node; the generator gives up and
// draws again (an outcome not known).
const drawTimeout = 5 * time.Second

// loop is generator i's loop: a think, then one ID from a name drawn.
func (p *parentSim) loop(i int) {
	r := p.r
	if r.Stopping() || r.Closing() {
		p.stopped++
		return
	}
	name := p.names[r.Rand.IntN(len(p.names))]
	ids := p.ids[name]
	ids.Call(i)
	p.inCall[i] = name
	inc := r.Incarnation(i)
	think := c.Sleep(time.Duration(r.Rand.Int64N(int64(100 * time.Millisecond))))
	executor.Submit(r.Execs[i], c.Seq(think, c.Timeout(idpersist.Next(p.cfg.Named(name)), drawTimeout)), func(id int64, err error) {
		if r.Incarnation(i) != inc {
			return
		}
		delete(p.inCall, i)
		switch {
		case err == nil:
			r.Check(ids.Return(i, id))
			if mk := p.stores.mark(name).v; id > mk {
				r.Errorf("client %d: %s: id %d handed out above the durable mark %d", i, name, id, mk)
			}
			r.Progress(i)
			if !r.FaultsOn() {
				p.after[name] = true
			}
			p.drawn++
		case errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrDeadlineExceeded):
			ids.Unknown(i)
		case errors.Is(err, task.ErrNoAuth):
			p.refused++
			ids.Unknown(i)
		case r.Closing():
			return
		default:
			ids.Unknown(i)
			r.Errorf("client %d: %s: %v", i, name, err)
		}
		p.loop(i)
	})
}

// remove is the user, on the remover's client: while the faults are on,
// after a pause it deletes a name's node and, 0 to 300 ms later, makes it
// again holding 0. A cycle begun is finished whatever happens: each step
// is tried again (a lost connection, an expiry, an ACL's refusal) until
// it is done or found done (NoNode, NodeExists: only the remover deletes
// or makes names). Once the faults have stopped, the user makes every
// name of the seed that a wipe took (a name retired or not yet registered
// when the data went is not restored by the leader) again, holding 0, and
// stops.
func (p *parentSim) remove(r *sim.Trial) {
	if r.Closing() {
		return
	}
	inc := r.Incarnation(remover)
	again := func(d time.Duration) {
		r.Clock.AfterFunc(d, func() {
			if !r.Closing() && r.Incarnation(remover) == inc {
				p.remove(r)
			}
		})
	}
	if !r.FaultsOn() && !p.restored {
		p.restored = true
		for _, n := range p.names {
			if !slices.Contains(p.toMake, n) {
				p.toMake = append(p.toMake, n)
			}
		}
	}
	if len(p.toMake) > 0 {
		name := p.toMake[0]
		mk := task.Create(p.cfg.Parent+"/"+name, seqid.Encode(0), task.Persistent)
		executor.Submit(r.Execs[remover], mk, func(_ string, err error) {
			if r.Incarnation(remover) != inc {
				return
			}
			if err != nil && !errors.Is(err, task.ErrNodeExists) {
				again(time.Duration(r.Rand.Int64N(int64(200 * time.Millisecond))))
				return
			}
			p.toMake = p.toMake[1:]
			if len(p.toMake) > 0 {
				p.remove(r)
				return
			}
			p.cycles++
			again(time.Duration(r.Rand.Int64N(int64(1500 * time.Millisecond))))
		})
		return
	}
	if !r.FaultsOn() {
		return
	}
	name := p.names[r.Rand.IntN(len(p.names))]
	del := task.Delete(p.cfg.Parent+"/"+name, task.AnyVersion)
	executor.Submit(r.Execs[remover], del, func(_ task.Unit, err error) {
		if r.Incarnation(remover) != inc {
			return
		}
		if err != nil && !errors.Is(err, task.ErrNoNode) {
			again(time.Duration(r.Rand.Int64N(int64(200 * time.Millisecond))))
			return
		}
		p.toMake = append(p.toMake, name)
		again(time.Duration(r.Rand.Int64N(int64(300 * time.Millisecond))))
	})
}

// limitsBelowMarks: each name's limit node, as the server holds it, is
// at or below the name's durable mark.
func (p *parentSim) limitsBelowMarks(r *sim.Trial) error {
	for _, n := range p.names {
		data, _, ok := r.NodeData(p.cfg.Limits + "/" + n)
		if !ok {
			continue
		}
		l, err := seqid.Decode(data)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		if mk := p.stores.mark(n).v; l > mk {
			return fmt.Errorf("%s: limit %d above the durable mark %d", n, l, mk)
		}
	}
	return nil
}

// lateConn is a generator's connection on which, while the faults are on
// in a seed whose plan has the Delay class, one multi in four is late on
// the network: it and every request sent after it are sent on, in order,
// 10 ms to 1.5 s later (the session is not touched: its requests are
// merely slow to leave).
type lateConn struct {
	*fakezk.Conn
	p     *parentSim
	i     int
	queue []func()
}

func (l *lateConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	send := func() { l.Conn.Do(req, done, watch) }
	if len(l.queue) > 0 {
		l.queue = append(l.queue, send)
		return
	}
	r := l.p.r
	if _, ok := req.(*task.MultiRequest); !ok || r == nil || !r.FaultsOn() || r.Closing() || !r.Plan.On.Has(sim.Delay) || r.Rand.IntN(4) != 0 {
		send()
		return
	}
	d := 10*time.Millisecond + time.Duration(r.Rand.Int64N(int64(1490*time.Millisecond)))
	l.p.late++
	r.Logf("client %d: a multi late on the network for %s", l.i, d)
	l.queue = append(l.queue, send)
	r.Clock.AfterFunc(d, func() {
		q := l.queue
		l.queue = nil
		for _, f := range q {
			f()
		}
	})
}

// The many-sequences scenario over seeds: names are removed and made
// again, multis come late, and nothing fails.
func TestParentSim(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	sc, p := newParentSim()
	st := sim.Check(t, sc, n)
	if st.Failures() > 0 {
		return
	}
	t.Logf("%d ids drawn, %d names removed and made again, %d multis late, %d replica runs and calls an ACL refused", p.drawn, p.cycles, p.late, p.refused)
	if p.drawn == 0 || p.cycles == 0 || p.late == 0 {
		t.Errorf("the scenario checks less than it says: %d ids drawn, %d remove cycles, %d late multis", p.drawn, p.cycles, p.late)
	}
}

// Two runs of the same seed have the same history, byte for byte.
func TestParentSimDeterminism(t *testing.T) {
	sc, _ := newParentSim()
	sim.Determinism(t, sc, sim.Sample(6, 1000))
}

// The retire that deleted the removed name's limit node (the limit of the
// name's next life made again at version 0, which a generator's late
// multi from the earlier life passes) is caught by the scenario.
func TestCanaryRetireDeletesLimit(t *testing.T) {
	restore := canary.Enable("idpersist/retire-deletes-limit")
	defer restore()
	sc, _ := newParentSim()
	sim.Catch(t, sc, "idpersist/retire-deletes-limit", 3, parentCanaryBound)
}

// parentCanaryBound: the seeds each hunt of TestCanaryRetireDeletesLimit
// may take. Measured: 47, 82 and 58 seeds for its three hunts, 367 at
// worst over twelve; with no multi late (lateConn off) the first hunt took
// 889 and the second found nothing in 2000: the late multi is what
// brings a write read in one life of a name into the next.
const parentCanaryBound = 500

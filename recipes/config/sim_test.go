package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// simSeeds is the number of seeds the simulation runs (fewer with -short;
// -sim.seeds and -sim.seed override it).
func simSeeds() int {
	if testing.Short() {
		return 40
	}
	return 150
}

const (
	simRoot = "/app/config"
	simNode = "/app/flag"
)

var simEntries = []string{"a", "b", "c"}

// configSim is the configuration scenario. Client 2 writes generations
// 1, 2, ... of the directory simRoot (entries a, b, c all set to the
// generation number), alternately in one multi (Update) and one write at
// a time under the invalid marker (UpdateMarked); client 3 writes
// increasing numbers to simNode. Client 0 follows the directory (WatchDir
// with the marker), all of /app (WatchDir with Subtree and the marker; on
// odd seeds with Recursive) and the node (Watch); client 1 runs a Reloader over the
// directory whose runs last until canceled. All under the faults the seed
// draws. Judged by:
//
//   - no delivered snapshot is half applied: a, b and c hold one
//     generation (the marker and the consistent snapshots at work);
//   - deliveries never go back: generations and node values only grow;
//   - at most one Reloader run is going at any time;
//   - once the faults stop and the writers end, the last delivered
//     directory and node are the server's (read directly), and the
//     Reloader's current run has the last generation: a change made while
//     a client was disconnected, or its session gone, is delivered after;
//   - no watcher ends with an error, no run fails.
type configSim struct {
	dirW, nodeW *Watcher
	treeW       *Watcher // client 0's Subtree watcher of /app
	lastTree    int
	rel         *Reloader
	lastGen     int // generation last delivered to client 0
	lastNode    int
	running     int // Reloader runs going
	cleaning    int // their cleanups going
	runGen      int // generation of the latest run started
	writers     int
	stoppedAt   time.Duration
	// counted over seeds
	deliveries, runs, marked int
}

func newConfigSim() (*configSim, sim.Scenario) {
	s := &configSim{}
	return s, sim.Scenario{
		Name:    "config",
		Clients: 4,
		// Pause, not yet crash-restart (a writer process that dies holding
		// the invalid marker needs the dead process's task value to
		// resume, and the readers their watchers rebuilt) nor operator
		// (the judge assumes whole generations; an operator's hand edit of
		// an entry or the marker is outside what the package promises).
		Faults:   sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.CrashRestart, sim.Operator), MaxRate: 0.05},
		Duration: 15 * time.Second,
		Setup: func(r *sim.Trial) error {
			s.lastGen, s.lastNode, s.running, s.runGen, s.stoppedAt, s.lastTree, s.cleaning = 0, 0, 0, 0, 0, 0, 0
			setup := c.Seq(task.Create("/app", nil, task.Persistent), task.Create(simRoot, nil, task.Persistent))
			if _, err := sim.Run(r.World, 2, setup); err != nil {
				return err
			}
			if _, err := sim.Run(r.World, 2, Update(simRoot, gen(0))); err != nil {
				return err
			}
			var err error
			if s.dirW, err = sim.Run(r.World, 0, WatchDir(simRoot, DirOptions{Marker: true}, func(snap Snapshot) {
				s.deliveries++
				g, err := generation(snap)
				if err != nil {
					r.Errorf("client 0: %v", err)
					return
				}
				if g < s.lastGen {
					r.Errorf("client 0: generation %d delivered after %d", g, s.lastGen)
				}
				s.lastGen = g
			})); err != nil {
				return fmt.Errorf("WatchDir: %w", err)
			}
			// On odd seeds the subtree watcher runs on one recursive watch.
			recursive := r.World.Seed%2 == 1
			if s.treeW, err = sim.Run(r.World, 0, WatchDir("/app", DirOptions{Marker: true, Subtree: true, Recursive: recursive}, func(snap Snapshot) {
				g, err := generation(subdir(snap, "config"))
				if err != nil {
					r.Errorf("client 0, subtree: %v", err)
					return
				}
				if g < s.lastTree {
					r.Errorf("client 0, subtree: generation %d delivered after %d", g, s.lastTree)
				}
				s.lastTree = g
			})); err != nil {
				return fmt.Errorf("WatchDir subtree: %w", err)
			}
			if s.nodeW, err = sim.Run(r.World, 0, Watch(simNode, func(snap Snapshot) {
				v := 0
				if snap.Exists {
					v, _ = strconv.Atoi(string(snap.Data))
				}
				if v < s.lastNode {
					r.Errorf("client 0: node value %d delivered after %d", v, s.lastNode)
				}
				s.lastNode = v
			})); err != nil {
				return fmt.Errorf("Watch: %w", err)
			}
			if s.rel, err = sim.Run(r.World, 1, Reload(simRoot, DirOptions{Marker: true}, s.apply(r))); err != nil {
				return fmt.Errorf("Reload: %w", err)
			}
			return nil
		},
		Workload: func(r *sim.Trial) {
			s.writers = 2
			s.writeDir(r)
			s.writeNode(r)
		},
		Live: func(r *sim.Trial) bool { return r.ProgressedSinceFaults(2) && r.ProgressedSinceFaults(3) },
		// The writers end; then the readers converge, or, once nothing is
		// left to happen or 30s later, the invariant says how they differ.
		Quiesce: func(r *sim.Trial) bool {
			if s.writers > 0 {
				return false
			}
			if s.stoppedAt == 0 {
				s.stoppedAt = r.Elapsed()
			}
			return s.converged(r) == nil || r.Clock.Pending() == 0 || r.Elapsed()-s.stoppedAt > 30*time.Second
		},
		Invariants: []sim.Invariant{
			sim.InvariantFunc(s.converged),
			sim.InvariantFunc(func(*sim.Trial) error {
				return errors.Join(s.dirW.Err(), s.nodeW.Err(), s.treeW.Err(), s.rel.Err())
			}),
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed),
		},
	}
}

// gen is generation g of the directory's entries.
func gen(g int) map[string][]byte {
	m := map[string][]byte{}
	for _, e := range simEntries {
		m[e] = []byte(strconv.Itoa(g))
	}
	return m
}

// generation returns the one generation a snapshot's entries hold, or an
// error if they hold several (a half-applied update) or miss one.
func generation(snap Snapshot) (int, error) {
	var g []string
	for _, e := range simEntries {
		v, ok := snap.Values[e]
		if !ok {
			return 0, fmt.Errorf("snapshot without entry %s: %v", e, snap.names())
		}
		g = append(g, string(v))
	}
	if len(slices.Compact(slices.Clone(g))) != 1 {
		return 0, fmt.Errorf("half-applied update delivered: a, b, c = %v", g)
	}
	return strconv.Atoi(g[0])
}

// subdir returns the entries of snap under dir, keyed by the rest of
// their path.
func subdir(snap Snapshot, dir string) Snapshot {
	out := Snapshot{Path: snap.Path + "/" + dir, Values: map[string][]byte{}}
	for k, v := range snap.Values {
		if rest, ok := strings.CutPrefix(k, dir+"/"); ok {
			out.Values[rest] = v
		}
	}
	return out
}

// apply is the Reloader's component: a run that counts itself going
// until its scope is canceled.
func (s *configSim) apply(r *sim.Trial) func(Snapshot) task.Task[task.Unit] {
	return func(snap Snapshot) task.Task[task.Unit] {
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			s.runs++
			g, err := generation(snap)
			if err != nil {
				r.Errorf("client 1: run with %v", err)
			}
			s.running++
			s.runGen = g
			if s.running > 1 {
				r.Errorf("client 1: %d Reloader runs at once", s.running)
			}
			if s.cleaning > 0 {
				r.Errorf("client 1: a Reloader run started while %d cleanups of the previous run still ran", s.cleaning)
			}
			// A cleanup that takes a while (Scope.Defer): the next run
			// starts only after it has ended.
			pause := time.Duration(r.Rand.IntN(50)) * time.Millisecond
			sc.Defer(task.Task[task.Unit](func(cs *task.Scope, ck task.Cont[task.Unit]) {
				s.cleaning++
				task.Run(cs, c.Sleep(pause), func(_ task.Unit, err error) {
					s.cleaning--
					ck(task.Unit{}, err)
				})
			}))
			task.Suspend(sc, func(_ task.Unit, err error) {
				s.running--
				k(task.Unit{}, err)
			}, func(task.Cont[task.Unit]) func() { return nil })
		}
	}
}

// writeDir writes generation after generation to the directory on
// client 2 until Stopping: odd ones with Update, even ones with
// UpdateMarked (run again on the next session if the session expires).
func (s *configSim) writeDir(r *sim.Trial) {
	g := 0
	var again func()
	again = func() {
		if r.Stopping() {
			s.writers--
			return
		}
		g++
		var t task.Task[task.Unit]
		if g%2 == 1 {
			t = Update(simRoot, gen(g))
		} else {
			s.marked++
			t = UpdateMarked(simRoot, gen(g))
		}
		t = c.Seq(t, c.Sleep(time.Duration(r.Rand.IntN(400))*time.Millisecond))
		var attempt func()
		attempt = func() {
			executor.Submit(r.Execs[2], t, func(_ task.Unit, err error) {
				switch {
				case err == nil:
					r.Progress(2)
					again()
				case errors.Is(err, task.ErrSessionExpired):
					attempt() // the same task: an UpdateMarked resumes with its marker
				case !r.Closing():
					r.Errorf("writer: generation %d: %v", g, err)
				}
			})
		}
		attempt()
	}
	again()
}

// writeNode writes 1, 2, ... to simNode on client 3 until Stopping.
func (s *configSim) writeNode(r *sim.Trial) {
	v := 0
	var again func()
	again = func() {
		if r.Stopping() {
			s.writers--
			return
		}
		v++
		data := []byte(strconv.Itoa(v))
		set := c.Catch(c.Map(c.Retry(task.Set(simNode, data, task.AnyVersion), retry), func(task.Stat) task.Unit { return task.Unit{} }),
			func(err error) task.Task[task.Unit] {
				if errors.Is(err, task.ErrNoNode) {
					return put(simNode, data, nil)
				}
				return task.Fail[task.Unit](err)
			})
		t := c.Seq(set, c.Sleep(time.Duration(r.Rand.IntN(300))*time.Millisecond))
		executor.Submit(r.Execs[3], t, func(_ task.Unit, err error) {
			switch {
			case err == nil:
				r.Progress(3)
			case errors.Is(err, task.ErrSessionExpired):
				v-- // write it again
			case r.Closing():
				return
			default:
				r.Errorf("node writer: %v", err)
			}
			again()
		})
	}
	again()
}

// converged compares what was delivered with the server's state, read
// directly.
func (s *configSim) converged(r *sim.Trial) error {
	tree, err := sim.ReadTree(r.World, 3, "/app")
	if err != nil {
		return err
	}
	if _, ok := tree["config/"+MarkerName]; ok {
		return fmt.Errorf("the invalid marker is left on the server")
	}
	want := map[string][]byte{}
	for _, e := range simEntries {
		want[e] = []byte(tree["config/"+e])
	}
	snap, ok := s.dirW.Latest()
	if !ok || !maps.EqualFunc(snap.Values, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		return fmt.Errorf("client 0: directory delivered %s, server has %s", show(snap.Values), show(want))
	}
	if snap, _ := s.treeW.Latest(); !maps.EqualFunc(subdir(snap, "config").Values, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		return fmt.Errorf("client 0: subtree delivered %s, server has %s", show(snap.Values), show(want))
	}
	if snap, _ := s.treeW.Latest(); string(snap.Values["flag"]) != tree["flag"] {
		return fmt.Errorf("client 0: subtree delivered flag %q, server has %q", snap.Values["flag"], tree["flag"])
	}
	w, _ := strconv.Atoi(tree["flag"])
	if s.lastNode != w {
		return fmt.Errorf("client 0: node value %d delivered, server has %q", s.lastNode, tree["flag"])
	}
	g, _ := strconv.Atoi(string(want["a"]))
	if s.running != 1 || s.runGen != g {
		return fmt.Errorf("client 1: %d runs going, the last with generation %d; server has %d", s.running, s.runGen, g)
	}
	return nil
}

func show(m map[string][]byte) string {
	out := "{"
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out += fmt.Sprintf(" %s=%s", k, m[k])
	}
	return out + " }"
}

// The simulation passes with every known bug off.
func TestSimulation(t *testing.T) {
	s, sc := newConfigSim()
	st := sim.Check(t, sc, simSeeds())
	t.Logf("over %d seeds: %d deliveries to client 0, %d Reloader runs, %d marked updates", st.Seeds, s.deliveries, s.runs, s.marked)
}

// canaryBound is the most seeds a canary may survive in each of
// canaryHunts disjoint seed ranges.
const (
	canaryBound = 300
	canaryHunts = 3
)

// Each known bug, switched back on, is caught by the simulation; sim.Catch
// logs the seeds each hunt needed for the first catch.
func TestCanaries(t *testing.T) {
	for _, name := range []canary.Name{bugIgnoreMarker, bugDeliverEvents, bugReloadNoCancel, bugReloadOverlapsCleanup} {
		t.Run(string(name), func(t *testing.T) {
			restore := canary.Enable(name)
			defer restore()
			_, sc := newConfigSim()
			sim.Catch(t, sc, string(name), canaryHunts, canaryBound)
		})
	}
}

// The same seed gives the same history (server trace, faults, outcome).
func TestSimDeterminism(t *testing.T) {
	_, sc := newConfigSim()
	sim.Determinism(t, sc, sim.Sample(5, 200))
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, sc := newConfigSim()
	sim.Explore(t, sc)
}

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
	"github.com/zkflow/zkflow/fakezk"
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

// configSim is the configuration scenario. Clients 2 and 3, two writer
// processes at once, each write generations 1, 2, ... of the directory
// simRoot (entries a, b, c all set to 10*generation + the writer's
// client number), alternately in one multi (Update) and one write at a
// time under the invalid marker (UpdateMarked); client 3 also writes
// increasing numbers to simNode. Client 0 follows the directory (WatchDir
// with the marker), all of /app (WatchDir with Subtree and the marker; on
// odd seeds with Recursive) and the node (Watch); client 1 runs a Reloader over the
// directory whose runs last until canceled. All under the faults the seed
// draws, crash-restart among them: a restarted writer runs the update
// the dead process left unfinished again (the same task value, as a
// process that kept its update's token would), so that a marker it left
// is resumed; restarted readers start their watchers again. Judged by:
//
//   - no delivered snapshot is half applied: a, b and c hold one
//     writer's one generation (the marker and the consistent snapshots
//     at work, and one marked writer at a time);
//   - deliveries never go back: the directory's values delivered follow
//     the order in which the server held them whole (serverOrder, from
//     its journal), each writer's generations, and node
//     values, only grow, and a marked update delivered and then
//     followed by another configuration is never delivered again (no
//     run of its task again writes a completed update a second time);
//   - every snapshot delivered, and every Reloader run's, is the
//     server's nodes as of one instant, Stats included (but Aversion),
//     with no marker then (simjudge_test.go, from the journal); each
//     delivery of a watcher is a new version (never the last one
//     again); a Reloader's runs never go back, and each starts with its
//     watcher's latest snapshot (by Stats);
//   - on the server (its journal), the directory is never half written
//     with no marker standing, and a marked update, once another
//     configuration came after it, is never whole again; an update
//     that succeeds was applied (the directory held it whole since it
//     started);
//   - at most one Reloader run is going at any time; a run's scope is
//     canceled only with ErrReloaded, an expiry or the watcher's end;
//     a Reloader's Done closes only once its run and the run's
//     cleanups have ended;
//   - a Watch delivers its first snapshot before its task succeeds;
//     the readers' sessions (clients 0 and 1) change no node;
//   - once the faults stop and the writers end, no marker is left, the
//     last delivered directory, subtree and node are the server's (read
//     directly, Stats included but Aversion), and the Reloader's current
//     run has the server's configuration: a change made while a client
//     was disconnected, or its session gone, is delivered after;
//   - no watcher ends with an error, no run fails.
type configSim struct {
	dirW, nodeW *Watcher
	treeW       *Watcher // client 0's Subtree watcher of /app
	tree        *history // client 0's Subtree deliveries
	rel         *Reloader
	dir         *history // client 0's WatchDir deliveries
	lastNode    int
	running     int // Reloader runs going
	runsJudged  int // Reloader runs whose start was judged against the watcher's latest
	cleaning    int // their cleanups going
	runVal      int // configuration of the latest run started
	writers     int
	dirs        map[int]*dirWriter // by client
	node        nodeWriter
	stoppedAt   time.Duration
	order       serverOrder   // the directory's whole values, in the server's order
	runHist     *history      // client 1's Reloader runs, as its process started them
	runSnap     Snapshot      // the snapshot of the latest run started
	readerSess  map[int64]int // the sessions of the readers' processes (clients 0 and 1): their client
	// counted over seeds
	deliveries, runs, marked, resumed int
	refused                           int // calls and watchers an ACL refused
	judged                            int // snapshots judged against the server's journal
}

// dirWriters are the clients that write the directory.
var dirWriters = []int{2, 3}

// dirWriter is a directory writer's state, which outlives its process.
type dirWriter struct {
	g    int                  // generation last started
	from int                  // the server's turns when it started (serverOrder.n)
	t    task.Task[task.Unit] // the update under way, nil between two
	done bool                 // the loop ended (Stopping)
}

// nodeWriter is the node writer's state, which outlives its process.
type nodeWriter struct {
	v       int  // value last started
	pending bool // its write is under way
	done    bool
}

func newConfigSim() (*configSim, sim.Scenario) {
	s := &configSim{}
	return s, sim.Scenario{
		Name: "config",
		Regressions: []sim.Regression{
			{Seed: 6, Why: "safety, acl class: a Reloader whose watcher a refused read ended left its run going and closed Done at once; the one started again ran beside it (2 runs at once)"},
			{Seed: 9000004, Root: sim.ExploreRoot, Why: "safety, acl class: as seed 6"},
			{Seed: 524, Root: sim.ExploreRoot, ReconnectLag: true, Why: "the fake's, not the recipe's: a session back through a lagging member had a watch SetWatches brought held back although the member had applied its change (fakezk looked only past the view, not from the client's last zxid), and read a half-applied update without the notification that would have told it"},
		},
		LagWatched: true,
		Clients:    4,
		// Not operator faults: the judge assumes whole generations, and an
		// operator's hand edit of an entry or the marker is outside what
		// the package promises.
		Faults: sim.Faults{Allow: sim.AllFaults&^sim.Of(sim.Operator) | sim.Of(sim.ACL), MaxRate: 0.05},
		// An operator closes a node for a while, or makes it read only:
		// /app, the directory, its entries, the marker, the flag node.
		ACL:      []string{"/app"},
		Duration: 15 * time.Second,
		Server:   fakezk.Config{Journal: s.order.Journal},
		Setup: func(r *sim.Trial) error {
			s.order.reset(r)
			s.dir, s.tree, s.runHist = newHistory(&s.order), newHistory(&s.order), newHistory(&s.order)
			s.runSnap, s.readerSess = Snapshot{}, map[int64]int{}
			s.followSessions(r, 0)
			s.followSessions(r, 1)
			s.lastNode, s.running, s.runVal, s.stoppedAt, s.cleaning = 0, 0, 0, 0, 0
			s.dirs, s.node = map[int]*dirWriter{}, nodeWriter{}
			setup := c.Seq(task.Create("/app", nil, task.Persistent), task.Create(simRoot, nil, task.Persistent))
			if _, err := sim.Run(r.World, 2, setup); err != nil {
				return err
			}
			if _, err := sim.Run(r.World, 2, Update(simRoot, gen(0))); err != nil {
				return err
			}
			var err error
			if s.dirW, err = sim.Run(r.World, 0, s.watchDir(r)); err != nil {
				return fmt.Errorf("WatchDir: %w", err)
			}
			s.follow(r, 0, s.dirW, func() task.Task[*Watcher] { return s.watchDir(r) }, func(w *Watcher) { s.dirW = w })
			if s.treeW, err = sim.Run(r.World, 0, s.watchTree(r)); err != nil {
				return fmt.Errorf("WatchDir subtree: %w", err)
			}
			s.follow(r, 0, s.treeW, func() task.Task[*Watcher] { return s.watchTree(r) }, func(w *Watcher) { s.treeW = w })
			if s.nodeW, err = sim.Run(r.World, 0, s.watchNode(r)); err != nil {
				return fmt.Errorf("Watch: %w", err)
			}
			if err := delivered(s.nodeW); err != nil {
				return err
			}
			s.follow(r, 0, s.nodeW, func() task.Task[*Watcher] { return s.watchNode(r) }, func(w *Watcher) { s.nodeW = w })
			s.rel = nil // the last seed's; apply judges against this seed's once it is set
			if s.rel, err = sim.Run(r.World, 1, Reload(simRoot, DirOptions{Marker: true}, s.apply(r))); err != nil {
				return fmt.Errorf("Reload: %w", err)
			}
			s.followReloader(r, s.rel)
			return nil
		},
		Workload: func(r *sim.Trial) {
			s.writers = len(dirWriters) + 1
			for _, i := range dirWriters {
				s.dirs[i] = &dirWriter{}
				s.writeDir(r, i)
			}
			s.writeNode(r)
		},
		Restart: s.restart,
		Live: func(r *sim.Trial) bool {
			return r.ProgressedSinceFaults(2) && r.ProgressedSinceFaults(3)
		},
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
				// A watcher an ACL ended is started again (follow).
				return errors.Join(notRefused(s.dirW.Err()), notRefused(s.nodeW.Err()), notRefused(s.treeW.Err()), notRefused(s.rel.Err()))
			}),
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed),
			sim.InvariantFunc(s.readersWroteNothing),
		},
	}
}

// restart starts client i's part again on its new process: readers
// their watchers (client 0) or Reloader (client 1), each writer its
// loop, with the update the dead process left unfinished first.
func (s *configSim) restart(r *sim.Trial, i int) {
	var start func(t func(*sim.Trial) task.Task[*Watcher], set func(*Watcher))
	start = func(t func(*sim.Trial) task.Task[*Watcher], set func(*Watcher)) {
		executor.Submit(r.Execs[i], t(r), func(w *Watcher, err error) {
			switch {
			case err == nil:
				set(w)
				r.Check(delivered(w))
				s.follow(r, i, w, func() task.Task[*Watcher] { return t(r) }, set)
			case errors.Is(err, task.ErrSessionExpired):
				start(t, set) // on the next session
			case errors.Is(err, task.ErrNoAuth):
				s.refused++
				s.later(r, i, func() { start(t, set) })
			case !r.Closing():
				r.Errorf("client %d: restarting a watcher: %v", i, err)
			}
		})
	}
	reload := func() {
		s.rel = nil // the dead process's; apply judges against the new one once it is set
		s.startReloader(r)
	}
	if i <= 1 {
		s.followSessions(r, i)
	}
	switch i {
	case 0:
		// What one process's watchers delivered: a new process, a new
		// client, may be served by a member behind what the dead one
		// had heard of (sim.Lag), as ZooKeeper allows.
		s.dir, s.tree, s.lastNode = newHistory(&s.order), newHistory(&s.order), 0
		start(s.watchDir, func(w *Watcher) { s.dirW = w })
		start(s.watchTree, func(w *Watcher) { s.treeW = w })
		start(s.watchNode, func(w *Watcher) { s.nodeW = w })
	case 1:
		s.running, s.cleaning = 0, 0 // the dead process's run and cleanups never go on
		s.runHist, s.runSnap = newHistory(&s.order), Snapshot{}
		reload()
	default:
		if i == 3 && !s.node.done {
			if s.node.pending {
				s.node.v-- // write it again
			}
			s.writeNode(r)
		}
		if w := s.dirs[i]; !w.done {
			if w.t != nil {
				s.resumed++
				s.submitDir(r, i)
				return
			}
			s.writeDir(r, i)
		}
	}
}

// value splits a directory value into its writer and generation.
func value(v int) (writer, g int) { return v % 10, v / 10 }

// history is what a reader delivered of the directory.
type history struct {
	last       map[int]int  // per writer, the generation last delivered
	prev       int          // the value last delivered
	superseded map[int]bool // marked updates delivered, then another
	order      *serverOrder // the directory's values in the server's order
	at         int          // the server's state the last delivery was, in order
}

func newHistory(o *serverOrder) *history {
	return &history{last: map[int]int{}, superseded: map[int]bool{}, order: o}
}

// serverOrder follows, from the server's journal (fakezk.Config.Journal),
// the whole values the directory took in turn: a, b and c holding one
// writer's one generation. A delivery of value v is one of v's turns,
// and a reader's deliveries take turns that never go back: a reader may
// skip states, never return to an older one (a value can have several
// turns: a restarted writer runs its update again). A Wipe, which no
// journal hears of, leaves the directory's mirror stale until its
// entries are written again: the judge is weaker then, never wrong.
type serverOrder struct {
	r     *sim.Trial
	w     *sim.World
	dir   string            // server path of simRoot
	vals  map[string]string // entry: its data, as the server holds it
	last  string            // the whole value of the last turn
	turns map[int][]int     // value: the indexes of its turns
	n     int               // turns so far

	// The journal's judges (simjudge_test.go).
	app     string               // server path of /app
	marker  string               // server path of the marker
	marked  bool                 // the marker exists
	nodes   map[string][]version // every node under /app: its versions, in order
	known   []string             // the paths of nodes, sorted
	writers map[int64]string     // session: a node under /app it changed
	flag    string               // server path of simNode
	paths   map[[2]string]string // server paths made (under)
	seen    []seenNode           // judgeSnapshot's, kept for the next
}

func (o *serverOrder) reset(r *sim.Trial) {
	w := r.World
	*o = serverOrder{r: r, w: w, dir: w.ServerPath(simRoot), vals: map[string]string{}, turns: map[int][]int{},
		app: w.ServerPath("/app"), marker: w.ServerPath(simRoot + "/" + MarkerName), nodes: map[string][]version{}, writers: map[int64]string{},
		flag: w.ServerPath(simNode), paths: map[[2]string]string{}}
}

// Journal is the server's Config.Journal (server lock held).
func (o *serverOrder) Journal(cm fakezk.Commit) {
	if o.w == nil {
		return
	}
	touched := false
	for _, n := range cm.Nodes {
		if e, ok := strings.CutPrefix(n.Path, o.dir+"/"); ok && slices.Contains(simEntries, e) {
			o.vals[e], touched = string(n.Data), true
		}
	}
	for _, d := range cm.Deleted {
		if e, ok := strings.CutPrefix(d, o.dir+"/"); ok && slices.Contains(simEntries, e) {
			delete(o.vals, e)
			touched = true
		}
	}
	o.heard(cm)
	if !touched {
		return
	}
	v, whole := o.vals[simEntries[0]]
	for _, e := range simEntries[1:] {
		if u, ok := o.vals[e]; !ok || u != v {
			whole = false
		}
	}
	if !whole || v == o.last {
		return
	}
	o.last = v
	if g, err := strconv.Atoi(v); err == nil {
		if w, gen := value(g); w != 0 && gen%2 == 0 && len(o.turns[g]) > 0 && o.r != nil {
			o.r.Errorf("zxid %#x: writer %d's marked generation %d whole on the server again (turn %d, its turns %v): a completed marked update written a second time", cm.Zxid, w, gen, o.n, o.turns[g])
		}
		o.turns[g] = append(o.turns[g], o.n)
		o.n++
	}
}

// next returns the first turn of v at or after turn from, or false.
func (o *serverOrder) next(v, from int) (int, bool) {
	for _, t := range o.turns[v] {
		if t >= from {
			return t, true
		}
	}
	return 0, false
}

// see checks a delivered value v: each writer's generations only grow,
// and an update made under the marker (an even generation), once
// delivered and followed by another configuration, never comes back:
// its entries are written under the marker, which is deleted once, so
// it becomes visible once.
func (h *history) see(v int) error {
	w, g := value(v)
	if g < h.last[w] {
		return fmt.Errorf("writer %d's generation %d delivered after %d", w, g, h.last[w])
	}
	if h.order != nil {
		t, ok := h.order.next(v, h.at)
		if !ok {
			return fmt.Errorf("value %d delivered after %d: the directory held it whole at no point since (its turns %v, the last delivery's %d)", v, h.prev, h.order.turns[v], h.at)
		}
		h.at = t
	}
	if h.superseded[v] {
		return fmt.Errorf("writer %d's marked generation %d delivered again after %d", w, g, h.prev)
	}
	if pw, pg := value(h.prev); v != h.prev && pw != 0 && pg%2 == 0 {
		h.superseded[h.prev] = true
	}
	h.last[w], h.prev = g, v
	return nil
}

// notRefused is err unless it is an ACL's refusal.
func notRefused(err error) error {
	if errors.Is(err, task.ErrNoAuth) {
		return nil
	}
	return err
}

// later runs f for client i's process after a wait drawn in [0,
// 300ms), unless the world is closing by then or the process crashed
// meanwhile (its restart took its part over).
func (s *configSim) later(r *sim.Trial, i int, f func()) {
	inc := r.Incarnation(i)
	r.Clock.AfterFunc(time.Duration(r.Rand.Int64N(int64(300*time.Millisecond))), func() {
		if !r.Closing() && r.Incarnation(i) == inc {
			f()
		}
	})
}

// startReloader runs client 1's Reloader (again on the next session if
// it expires, a little later if an ACL refuses it) and follows it.
func (s *configSim) startReloader(r *sim.Trial) {
	executor.Submit(r.Execs[1], Reload(simRoot, DirOptions{Marker: true}, s.apply(r)), func(rel *Reloader, err error) {
		switch {
		case err == nil:
			s.rel = rel
			s.followReloader(r, rel)
		case errors.Is(err, task.ErrSessionExpired):
			s.startReloader(r)
		case errors.Is(err, task.ErrNoAuth):
			s.refused++
			s.later(r, 1, func() { s.startReloader(r) })
		case !r.Closing():
			r.Errorf("client 1: restarting the Reloader: %v", err)
		}
	})
}

// followReloader starts client 1's Reloader again once an operator's
// ACL ends it. Its runs and cleanups have ended with it.
func (s *configSim) followReloader(r *sim.Trial, rel *Reloader) {
	r.Go(1, func(a *sim.Actor) {
		if a.Wait(a.Context(), rel.Done()) != nil || r.Closing() || s.rel != rel {
			return
		}
		// Done closes once the run going and its cleanups have ended.
		if s.running != 0 || s.cleaning != 0 {
			r.Errorf("client 1: the Reloader's Done closed (%v) with %d runs and %d cleanups going", rel.Err(), s.running, s.cleaning)
		}
		if !errors.Is(rel.Err(), task.ErrNoAuth) {
			return
		}
		s.refused++
		s.later(r, 1, func() { s.startReloader(r) })
	})
}

// follow starts watcher w again, on its process (client i), each time
// an operator's ACL ends it: its deliveries go on into the same history
// (one session's reads never go back). set records each new watcher.
func (s *configSim) follow(r *sim.Trial, i int, w interface {
	Done() <-chan struct{}
	Err() error
}, again func() task.Task[*Watcher], set func(*Watcher)) {
	r.Go(i, func(a *sim.Actor) {
		if a.Wait(a.Context(), w.Done()) != nil || !errors.Is(w.Err(), task.ErrNoAuth) || r.Closing() {
			return
		}
		s.refused++
		s.later(r, i, func() {
			executor.Submit(r.Execs[i], again(), func(nw *Watcher, err error) {
				switch {
				case err == nil:
					set(nw)
					r.Check(delivered(nw))
					s.follow(r, i, nw, again, set)
				case errors.Is(err, task.ErrNoAuth), errors.Is(err, task.ErrSessionExpired):
					s.follow(r, i, w, again, set) // (w has ended: try again a little later)
				case !r.Closing():
					r.Errorf("client %d: starting a watcher again: %v", i, err)
				}
			})
		})
	})
}

// watchDir is client 0's WatchDir of the directory, with the marker.
func (s *configSim) watchDir(r *sim.Trial) task.Task[*Watcher] {
	var prev *Snapshot // this watcher's last delivery
	return WatchDir(simRoot, DirOptions{Marker: true}, func(snap Snapshot) {
		s.deliveries++
		if v, err := generation(snap); err != nil {
			r.Errorf("client 0: %v", err)
		} else if err := s.dir.see(v); err != nil {
			r.Errorf("client 0: %v", err)
		}
		// Its Stats too: the server's nodes at one instant, a new version.
		if err := errors.Join(distinct(prev, snap), s.judgeSnapshot("dir", snap)); err != nil {
			r.Errorf("client 0: %v", err)
		}
		prev = &snap
	})
}

// watchTree is client 0's Subtree watcher of /app, on one recursive
// watch on odd seeds.
func (s *configSim) watchTree(r *sim.Trial) task.Task[*Watcher] {
	recursive := r.World.Seed%2 == 1
	var prev *Snapshot // this watcher's last delivery
	return WatchDir("/app", DirOptions{Marker: true, Subtree: true, Recursive: recursive}, func(snap Snapshot) {
		if v, err := generation(subdir(snap, "config")); err != nil {
			r.Errorf("client 0, subtree: %v", err)
		} else if err := s.tree.see(v); err != nil {
			r.Errorf("client 0, subtree: %v", err)
		}
		if err := errors.Join(distinct(prev, snap), s.judgeSnapshot("tree", snap)); err != nil {
			r.Errorf("client 0, subtree: %v", err)
		}
		prev = &snap
	})
}

// watchNode is client 0's Watch of the node.
func (s *configSim) watchNode(r *sim.Trial) task.Task[*Watcher] {
	var prev *Snapshot // this watcher's last delivery
	return Watch(simNode, func(snap Snapshot) {
		v := 0
		if snap.Exists {
			v, _ = strconv.Atoi(string(snap.Data))
		}
		if v < s.lastNode {
			r.Errorf("client 0: node value %d delivered after %d", v, s.lastNode)
		}
		s.lastNode = v
		if err := errors.Join(distinct(prev, snap), s.judgeSnapshot("node", snap)); err != nil {
			r.Errorf("client 0, node: %v", err)
		}
		prev = &snap
	})
}

// gen is the directory's entries all set to g.
func gen(g int) map[string][]byte {
	m := map[string][]byte{}
	for _, e := range simEntries {
		m[e] = []byte(strconv.Itoa(g))
	}
	return m
}

// generation returns the one value a snapshot's entries hold, or an
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
			v, err := generation(snap)
			if err != nil {
				r.Errorf("client 1: run with %v", err)
			}
			// Versions that arrive while a run ends coalesce to the
			// latest: a run starts with the watcher's latest snapshot,
			// unless a newer one came after it was scheduled (its scope
			// is then already canceled with ErrReloaded).
			if s.rel != nil && err == nil && sc.Err() == nil {
				if latest, ok := s.rel.Watcher().Latest(); ok {
					if lv, lerr := generation(latest); lerr == nil && lv != v {
						r.Errorf("client 1: a Reloader run started with generation %d, the watcher's latest being %d", v, lv)
					}
					s.runsJudged++
				}
			}
			s.running++
			s.runVal = v
			if s.running > 1 {
				r.Errorf("client 1: %d Reloader runs at once", s.running)
			}
			if s.cleaning > 0 {
				r.Errorf("client 1: a Reloader run started while %d cleanups of the previous run still ran", s.cleaning)
			}
			// A run's configuration is the server's as of one instant,
			// Stats included, the watcher's latest version, and runs
			// never go back to an older one.
			if jerr := s.judgeSnapshot("dir", snap); jerr != nil {
				r.Errorf("client 1: a Reloader run with a %v", jerr)
			}
			if s.rel != nil && sc.Err() == nil {
				if latest, ok := s.rel.Watcher().Latest(); ok && !maps.Equal(latest.Stats, snap.Stats) {
					r.Errorf("client 1: a Reloader run started with version %#x, the watcher's latest being %#x", snap.Version(), latest.Version())
				}
			}
			if err == nil {
				if herr := s.runHist.see(v); herr != nil {
					r.Errorf("client 1: Reloader runs: %v", herr)
				}
			}
			s.runSnap = snap
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
				// A run ends when its scope is canceled: with ErrReloaded
				// for a new version, the session's expiry, or the
				// watcher's end (an ACL's refusal: no Reloader is
				// stopped here, and the executors close only with the
				// world).
				if !r.Closing() && !errors.Is(err, ErrReloaded) && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrNoAuth) {
					r.Errorf("client 1: a Reloader run with generation %d canceled with %v", v, err)
				}
				k(task.Unit{}, err)
			}, func(task.Cont[task.Unit]) func() { return nil })
		}
	}
}

// writeDir writes generation after generation to the directory on
// client i until Stopping: odd ones with Update, even ones with
// UpdateMarked; each waits up to 800ms after its update, so the two
// write about as often as one did with 400ms.
func (s *configSim) writeDir(r *sim.Trial, i int) {
	w := s.dirs[i]
	if r.Stopping() {
		w.done = true
		s.writers--
		return
	}
	w.g++
	var t task.Task[task.Unit]
	if w.g%2 == 1 {
		t = Update(simRoot, gen(10*w.g+i))
	} else {
		s.marked++
		t = UpdateMarked(simRoot, gen(10*w.g+i))
	}
	w.t = c.Seq(t, c.Sleep(time.Duration(r.Rand.IntN(800))*time.Millisecond))
	w.from = s.order.n
	s.submitDir(r, i)
}

// submitDir runs client i's update under way on its process, again on
// the next session if the session expires (the same task: an
// UpdateMarked resumes with its marker).
func (s *configSim) submitDir(r *sim.Trial, i int) {
	w := s.dirs[i]
	executor.Submit(r.Execs[i], w.t, func(_ task.Unit, err error) {
		switch {
		case err == nil:
			// Done means applied: the directory held the update whole
			// since it started.
			if _, ok := s.order.next(10*w.g+i, w.from); !ok {
				r.Errorf("writer %d: generation %d done, but the directory never held it whole since it started (its turns %v, from %d)", i, w.g, s.order.turns[10*w.g+i], w.from)
			}
			w.t = nil
			r.Progress(i)
			s.writeDir(r, i)
		case errors.Is(err, task.ErrSessionExpired):
			s.submitDir(r, i)
		case errors.Is(err, task.ErrNoAuth):
			// Refused by an operator's ACL (an UpdateMarked maybe
			// midway, its marker left): the same task again a little
			// later, as after an expiry.
			s.refused++
			s.later(r, i, func() { s.submitDir(r, i) })
		case !r.Closing():
			r.Errorf("writer %d: generation %d: %v", i, w.g, err)
		}
	})
}

// writeNode writes 1, 2, ... to simNode on client 3 until Stopping.
func (s *configSim) writeNode(r *sim.Trial) {
	n := &s.node
	if r.Stopping() {
		n.done = true
		s.writers--
		return
	}
	n.v++
	n.pending = true
	data := []byte(strconv.Itoa(n.v))
	set := c.Catch(c.Map(c.Retry(task.Set(simNode, data, task.AnyVersion), retry), func(task.Stat) task.Unit { return task.Unit{} }),
		func(err error) task.Task[task.Unit] {
			if errors.Is(err, task.ErrNoNode) {
				return put(simNode, data, nil)
			}
			return task.Fail[task.Unit](err)
		})
	t := c.Seq(set, c.Sleep(time.Duration(r.Rand.IntN(300))*time.Millisecond))
	executor.Submit(r.Execs[3], t, func(_ task.Unit, err error) {
		n.pending = false
		switch {
		case err == nil:
			r.Progress(3)
		case errors.Is(err, task.ErrSessionExpired):
			n.v-- // write it again
		case errors.Is(err, task.ErrNoAuth):
			n.v-- // refused by an operator's ACL: write it again a little later
			s.refused++
			s.later(r, 3, func() { s.writeNode(r) })
			return
		case r.Closing():
			return
		default:
			r.Errorf("node writer: %v", err)
		}
		s.writeNode(r)
	})
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
	v, _ := strconv.Atoi(string(want["a"]))
	if s.running != 1 || s.runVal != v {
		return fmt.Errorf("client 1: %d runs going, the last with %d; server has %d", s.running, s.runVal, v)
	}
	return s.convergedStats(r)
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
	t.Logf("over %d seeds: %d deliveries to client 0, %d Reloader runs (%d judged against the watcher's latest at their start), %d snapshots judged against the server's journal, %d marked updates, %d updates run again by a restarted writer, %d calls and watchers an ACL refused", st.Seeds, s.deliveries, s.runs, s.runsJudged, s.judged, s.marked, s.resumed, s.refused)
	if st.Failures() == 0 && (s.runsJudged == 0 || s.judged == 0) {
		t.Fatal("no Reloader run's start, or no snapshot, was judged: the test checks nothing")
	}
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
	for _, name := range []canary.Name{bugIgnoreMarker, bugDeliverEvents, bugReloadNoCancel, bugReloadOverlapsCleanup, bugMarkerAnyToken, bugMarkedRewrite,
		bugReloadDoneEarly, bugRedeliver, bugUpdateLossAsApplied} {
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

// A resumed UpdateMarked's sync before it reads its marker, switched off,
// is caught by seed 78: no update completes again once the faults stop (a
// liveness failure), as a restarted process that reads its marker as
// gone on a lagging server, takes its delete for applied and leaves the
// marker would. The seed passes with the sync. (Seed 407 caught it until
// UpdateMarked read each entry before writing it, seed 5 until the
// caches synced on a new session and the simulation drew a lagging
// member for new sessions, each changing the histories; seed 78 was the
// first of a hunt from 1.)
func TestCanaryDeleteMarkerWithoutSync(t *testing.T) {
	restore := canary.Enable(bugDeleteMarkerWithoutSync)
	defer restore()
	_, sc := newConfigSim()
	sc.NoBlinks = true // the seed's history from before the blink class
	res := sim.RunSeed(sc, 78, false)
	if res.Err == nil {
		t.Fatal("seed 78 passes without the sync: the scenario no longer reaches the stale read")
	}
	t.Logf("seed 78: %v", res.Err)
}

package sim

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zkflow/zkflow/task"
)

// A world under a root (Config.Root, Scenario.Root) connects every client
// with fakezk.ConnConfig.Root set: the clients, and so the recipes, see
// the tree below the root as the whole tree, as they would behind a
// "host:port/app" connect string. The world creates the root and its
// ancestors before the clients connect, and again right after a Wipe, as
// the operator who provisions (or rebuilds) an ensemble for a chrooted
// application does: the Conn does not create it, as ZooKeeper's client
// does not.
//
// Everything the world offers for reading the server's tree directly
// (Children, NodeStat, NodeData, Paths, SetCounters, ReadTree, FenceLog,
// the Operator fault, Operated) takes and gives the clients' paths, so a
// checker reads the same paths with or without a root. World.Server is
// the bare server: its methods take full paths (World.ServerPath maps).

// ExploreRoot is the root Explore runs one seed in four under (two
// levels deep, so that an ancestor exists that no client sees).
const ExploreRoot = "/sim/chroot"

// RootedSeed reports whether Explore runs seed under ExploreRoot: one
// seed in four, in the fixed range and in the drawn one alike. For an
// explorer of one's own that roots seeds as Explore does.
func RootedSeed(seed uint64) bool { return seed%4 == 0 }

// explored returns the scenario Explore runs seed of sc with, replays
// included (-sim.seed): sc under ExploreRoot if RootedSeed(seed) and sc
// has no Root of its own; a regression seed of sc (Scenario.Regressions)
// under the root it failed with (Regression.Root), without twins if it
// failed before they existed (Regression.NoTwins), and without the draw of
// lagging watched reads or restarts onto a lagging member if it failed
// before those (Regression.NoLagWatched, Regression.NoRestartLag, and
// the lagging member after a cut unless Regression.ReconnectLag), and
// without the counter classes or the operator's writes if its scenario
// took them later (Regression.NoCounters, Regression.NoOperatorWrites), or
// without contexts ending at connection losses (Regression.NoOutageEnds)
// or goroutines waking late (Regression.NoActorLag), or the acl class
// (Regression.NoACL), and with the executors' sync after a reconnect only
// if it failed with it (Regression.SyncAfterReconnect), and without the
// blink and operator-in-cut classes unless it failed with them
// (Regression.Blinks), and without the remove-watches class unless it
// failed with it (Regression.RemoveWatches), so that it replays
// the history it was recorded with. Any other seed runs with the sync on
// if SyncedSeed(seed).
func explored(sc Scenario, seed uint64) Scenario {
	if i := slices.IndexFunc(sc.Regressions, func(r Regression) bool { return r.Seed == seed }); i >= 0 {
		if sc.Root == "" {
			sc.Root = sc.Regressions[i].Root
		}
		if sc.Regressions[i].NoTwins {
			sc.NoTwins = true
		}
		if sc.Regressions[i].NoLagWatched {
			sc.NoLagWatched = true
		}
		if sc.Regressions[i].NoRestartLag {
			sc.NoRestartLag = true
		}
		if !sc.Regressions[i].ReconnectLag {
			sc.NoReconnectLag = true
		}
		if sc.Regressions[i].NoCounters {
			sc.Faults.Allow &^= CounterFaults
		}
		if sc.Regressions[i].NoOperatorWrites {
			sc.OperatorWrites = false
		}
		if sc.Regressions[i].NoOutageEnds {
			sc.OutageEnds = false
		}
		if sc.Regressions[i].NoActorLag {
			sc.ActorLag = false
		}
		if sc.Regressions[i].NoACL {
			sc.Faults.Allow &^= Of(ACL)
		}
		if sc.Regressions[i].SyncAfterReconnect {
			sc.SyncAfterReconnect = true
		}
		if !sc.Regressions[i].Blinks {
			sc.NoBlinks = true
		}
		if !sc.Regressions[i].RemoveWatches {
			sc.NoRemoveWatches = true
		}
		return sc
	}
	if sc.Root == "" && RootedSeed(seed) {
		sc.Root = ExploreRoot
	}
	if SyncedSeed(seed) {
		sc.SyncAfterReconnect = true
	}
	return sc
}

// SyncedSeed reports whether Explore runs seed with the executors' sync
// after a reconnect on (executor.Config.NoSyncAfterReconnect, on by
// default) when its scenario has it off: one seed in four, drawn on a
// stream of its own (the other seeds keep their history). For an
// explorer of one's own that draws it as Explore does.
func SyncedSeed(seed uint64) bool {
	return rand.New(rand.NewPCG(seed, 0x5359_4e43_4355_5421)).IntN(4) == 0
}

// Root returns the root every client connects under ("" for none).
func (w *World) Root() string { return w.root }

// ServerPath returns the server's path for a client's path p ("/" is the
// root itself).
func (w *World) ServerPath(p string) string {
	if w.root == "" {
		return p
	}
	if p == "/" {
		return w.root
	}
	return w.root + p
}

// ClientPath returns the clients' path for a server's path p, and false
// if p is not the root or below it.
func (w *World) ClientPath(p string) (string, bool) {
	if w.root == "" {
		return p, true
	}
	if p == w.root {
		return "/", true
	}
	rest, ok := strings.CutPrefix(p, w.root)
	if !ok || !strings.HasPrefix(rest, "/") {
		return "", false
	}
	return rest, true
}

// NodeStat is Server.NodeStat of a client's path.
func (w *World) NodeStat(p string) (task.Stat, bool) { return w.Server.NodeStat(w.ServerPath(p)) }

// NodeData is Server.NodeData of a client's path.
func (w *World) NodeData(p string) ([]byte, task.Stat, bool) {
	return w.Server.NodeData(w.ServerPath(p))
}

// SetCounters is Server.SetCounters of a client's path.
func (w *World) SetCounters(p string, version, cversion int32) error {
	return w.Server.SetCounters(w.ServerPath(p), version, cversion)
}

// Paths returns the path of every node the clients can see, as they see
// it, sorted: every node under a root ("/" for the root itself), every
// node without one.
func (w *World) Paths() []string {
	all := w.Server.Paths()
	if w.root == "" {
		return all
	}
	out := all[:0] // the paths below the root share it: their order stays
	for _, p := range all {
		if cp, ok := w.ClientPath(p); ok {
			out = append(out, cp)
		}
	}
	return out
}

// escaped lists, under a root, the nodes outside it that are neither its
// ancestors nor ZooKeeper's own: nodes that escaped the chroot (and that
// checkers reading below the root would never see).
func (w *World) escaped() []string {
	if w.root == "" {
		return nil
	}
	var out []string
	for _, p := range w.Server.Paths() {
		if _, below := w.ClientPath(p); below || p == "/" || p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") ||
			strings.HasPrefix(w.root, p+"/") {
			continue
		}
		out = append(out, p)
	}
	return out
}

// provisionRoot creates the root and its ancestors, those that are
// missing.
func (w *World) provisionRoot() error {
	if w.root == "" {
		return nil
	}
	for i := 1; i <= len(w.root); i++ {
		if i < len(w.root) && w.root[i] != '/' {
			continue
		}
		err := w.Server.AdminCreate(w.root[:i], nil, 0)
		if err != nil && !errors.Is(err, task.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// reprovision creates the root again after a wipe; while the server is
// down it tries again every second of the clock.
func (w *World) reprovision() {
	if err := w.provisionRoot(); errors.Is(err, task.ErrNotSent) {
		w.Clock.AfterFunc(time.Second, w.reprovision)
	}
}

// Wipe is Server.Wipe, total ensemble loss, followed at once by the
// re-creation of the root (if any) that whoever rebuilds the ensemble
// does before the application can run.
func (w *World) Wipe() {
	w.Server.Wipe()
	w.reprovision()
}

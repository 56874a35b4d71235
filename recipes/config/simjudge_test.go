package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The config scenario's judges of what the server held, from its journal
// (serverOrder hears every commit): the whole values the directory took
// in turn (sim_test.go), and, here, every version of every node under
// /app, which judges:
//
//   - the directory is never half written with no marker standing: after
//     each change to an entry or the marker, either root/invalid exists
//     or a, b and c hold one value (Update is all or nothing, and
//     UpdateMarked writes its entries only under its marker, which a
//     crash, an expiry or a refusal leaves standing);
//   - a marked update, once another configuration came after it, is
//     never whole on the server again (a run of its task again does not
//     write a completed update a second time);
//   - every snapshot delivered (by each watcher, and to each Reloader
//     run) is the server's nodes as of one instant: each node's Stat (but
//     Aversion: ZooKeeper fires no watch on setACL) and data are one of
//     its versions, every node the watcher follows is in it, and, under
//     the marker, root/invalid did not exist at that instant;
//   - the readers' sessions change no node under /app (readers create no
//     node).

// version is one state of a node as the journal told it.
type version struct {
	zxid int64     // the commit that made it
	stat task.Stat // as clients see it
	data string
	gone bool // the commit deleted the node
}

// span is the zxids [from, to).
type span struct{ from, to int64 }

// clientStat is a stored Stat (fakezk.Node) as a client reads it.
func clientStat(st task.Stat) task.Stat {
	st.Cversion = st.Cversion*2 - st.NumChildren
	return st
}

// statEqual compares two Stats but Aversion, which no watch follows.
func statEqual(a, b task.Stat) bool {
	a.Aversion, b.Aversion = 0, 0
	return a == b
}

// record hears a node under /app changed (n) or deleted (n nil) at zxid.
// Server lock held (Journal).
func (o *serverOrder) record(zxid int64, path string, n *fakezk.Node) {
	vs, known := o.nodes[path]
	if !known {
		o.known = append(o.known, path)
		slices.Sort(o.known)
	}
	v := version{zxid: zxid, gone: n == nil}
	if n != nil {
		v.stat, v.data = clientStat(n.Stat), string(n.Data)
	}
	if k := len(vs); k > 0 && vs[k-1].gone == v.gone && (v.gone || statEqual(vs[k-1].stat, v.stat) && vs[k-1].data == v.data) {
		return // an ACL's change, nothing a reader follows
	}
	o.nodes[path] = append(vs, v)
}

// heard judges a commit under /app (server lock held): the marker's
// state, the directory whole when it has none, and who wrote.
func (o *serverOrder) heard(cm fakezk.Commit) {
	touched := false
	for i := range cm.Nodes {
		n := &cm.Nodes[i]
		if !strings.HasPrefix(n.Path, o.app+"/") {
			continue
		}
		o.record(cm.Zxid, n.Path, n)
		o.wrote(cm.Session, n.Path)
		if n.Path == o.marker {
			o.marked = true
		}
		touched = touched || n.Path == o.marker || strings.HasPrefix(n.Path, o.dir+"/")
	}
	for _, d := range cm.Deleted {
		if !strings.HasPrefix(d, o.app+"/") {
			continue
		}
		o.record(cm.Zxid, d, nil)
		o.wrote(cm.Session, d)
		if d == o.marker {
			o.marked = false
		}
		touched = touched || d == o.marker || strings.HasPrefix(d, o.dir+"/")
	}
	if !touched || o.marked || o.r == nil {
		return
	}
	var vals []string
	for _, e := range simEntries {
		vals = append(vals, o.vals[e])
	}
	if len(slices.Compact(slices.Clone(vals))) != 1 || len(o.vals) != len(simEntries) {
		o.r.Errorf("zxid %#x (session %#x): the directory holds a, b, c = %q with no marker standing: an update half applied, exposed to every reader", cm.Zxid, cm.Session, vals)
	}
}

// wrote notes that session changed path (the first path of each).
func (o *serverOrder) wrote(session int64, path string) {
	if _, ok := o.writers[session]; !ok && session != 0 {
		o.writers[session] = path
	}
}

// dataEqual compares the fields of two Stats a data watch follows: not
// the children's (Cversion, NumChildren, Pzxid) nor Aversion.
func dataEqual(a, b task.Stat) bool {
	a.Cversion, a.NumChildren, a.Pzxid = b.Cversion, b.NumChildren, b.Pzxid
	return statEqual(a, b)
}

// allowed returns the spans during which path held the node (st, data),
// or, with seen false, held no node (those that end after from only);
// nil if it never did. With loose, a node's children may have changed
// (dataEqual).
func (o *serverOrder) allowed(path string, seen, loose bool, st task.Stat, data []byte, from int64) []span {
	vs := o.nodes[path]
	end := func(k int) int64 {
		if k+1 < len(vs) {
			return vs[k+1].zxid
		}
		return math.MaxInt64
	}
	if seen {
		var out []span
		for k := len(vs) - 1; k >= 0; k-- {
			if vs[k].gone || vs[k].data != string(data) || !dataEqual(vs[k].stat, st) {
				continue
			}
			if !loose && statEqual(vs[k].stat, st) {
				return []span{{vs[k].zxid, end(k)}}
			}
			if loose {
				if n := len(out); n > 0 && out[n-1].from == end(k) {
					out[n-1].from = vs[k].zxid
				} else {
					out = append(out, span{vs[k].zxid, end(k)})
				}
			}
		}
		slices.Reverse(out)
		return out
	}
	if len(vs) == 0 {
		return []span{{0, math.MaxInt64}}
	}
	var out []span
	if from < vs[0].zxid {
		out = append(out, span{0, vs[0].zxid})
	}
	// From the version that holds from on: the ones before end earlier.
	first := max(sort.Search(len(vs), func(k int) bool { return vs[k].zxid > from })-1, 0)
	for k := first; k < len(vs); k++ {
		if vs[k].gone {
			out = append(out, span{vs[k].zxid, end(k)})
		}
	}
	return out
}

// intersect returns the zxids in both a and b (each sorted, disjoint).
func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if lo < hi {
			out = append(out, span{lo, hi})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

// seenNode is a node a reader delivered: its server path, Stat and data.
type seenNode struct {
	path string
	stat task.Stat
	data []byte
}

// instant judges that nodes (what a reader delivered) are what the
// server held at one zxid among the nodes in scope: those delivered as
// they were, every other one absent. With loose, a node's children
// fields are not judged.
func (o *serverOrder) instant(scope func(path string) bool, loose bool, nodes []seenNode) error {
	at := []span{{0, math.MaxInt64}}
	for _, n := range nodes {
		if !scope(n.path) {
			return fmt.Errorf("%s delivered, outside what the reader follows", n.path)
		}
		a := o.allowed(n.path, true, loose, n.stat, n.data, 0)
		if a == nil {
			return fmt.Errorf("%s delivered with data %q and Stat %+v, a version the server never held (%s)", n.path, n.data, n.stat, o.describe(n.path))
		}
		at = intersect(at, a)
	}
	delivered := func(p string) int {
		return slices.IndexFunc(nodes, func(n seenNode) bool { return n.path == p })
	}
	for _, p := range o.known {
		if len(at) > 0 && scope(p) && delivered(p) < 0 {
			at = intersect(at, o.allowed(p, false, false, task.Stat{}, nil, at[0].from))
		}
	}
	if len(at) == 0 {
		var b strings.Builder
		for _, p := range o.known {
			if !scope(p) {
				continue
			}
			if k := delivered(p); k >= 0 {
				n := nodes[k]
				fmt.Fprintf(&b, "; %s delivered as of %v (Stat %+v): %s", p, o.allowed(p, true, loose, n.stat, n.data, 0), n.stat, o.describe(p))
			} else {
				fmt.Fprintf(&b, "; %s not delivered: %s", p, o.describe(p))
			}
		}
		return fmt.Errorf("the nodes delivered were never on the server at one instant%s", b.String())
	}
	return nil
}

// under returns the server path of name under base (a server path),
// made once.
func (o *serverOrder) under(base, name string) string {
	key := [2]string{base, name}
	p, ok := o.paths[key]
	if !ok {
		p = base + "/" + name
		o.paths[key] = p
	}
	return p
}

// describe lists path's last versions, for a report.
func (o *serverOrder) describe(path string) string {
	vs := o.nodes[path]
	var parts []string
	for _, v := range vs[max(0, len(vs)-6):] {
		if v.gone {
			parts = append(parts, fmt.Sprintf("deleted at %#x", v.zxid))
		} else {
			parts = append(parts, fmt.Sprintf("%q at %#x", v.data, v.zxid))
		}
	}
	return "versions " + strings.Join(parts, ", ")
}

// judgeSnapshot judges a snapshot a reader delivered: its fields, and
// that it is the server's nodes as of one instant (the marker absent
// then, for a reader that honours it). kind is "dir" (simRoot's
// children), "tree" (all of /app) or "node" (simNode).
func (s *configSim) judgeSnapshot(kind string, snap Snapshot) error {
	o := &s.order
	nodes := o.seen[:0]
	defer func() { o.seen = nodes[:0] }()
	var scope func(string) bool
	switch kind {
	case "node":
		if snap.Path != simNode || snap.Values != nil || snap.Exists != (len(snap.Stats) == 1) {
			return fmt.Errorf("node snapshot of %s: Exists %t, Stats %v, Values %v", snap.Path, snap.Exists, snap.Stats, snap.Values)
		}
		if st, ok := snap.Stats[""]; ok {
			nodes = append(nodes, seenNode{o.flag, st, snap.Data})
		}
		scope = func(p string) bool { return p == o.flag }
	default:
		root, base := simRoot, o.dir
		scope = func(p string) bool { return task.Parent(p) == o.dir }
		if kind == "tree" {
			root, base = "/app", o.app
			scope = func(p string) bool { return len(p) > len(o.app) && p[len(o.app)] == '/' && strings.HasPrefix(p, o.app) }
		}
		if snap.Path != root || snap.Exists != (len(snap.Values) > 0) || len(snap.Values) != len(snap.Stats) {
			return fmt.Errorf("%s snapshot of %s: Exists %t with %d values and %d Stats", kind, snap.Path, snap.Exists, len(snap.Values), len(snap.Stats))
		}
		for name, st := range snap.Stats {
			v, ok := snap.Values[name]
			if !ok {
				return fmt.Errorf("%s snapshot: a Stat for %s, no value", kind, name)
			}
			nodes = append(nodes, seenNode{o.under(base, name), st, v})
		}
	}
	// A recursive TreeCache is not told of a node deleted while an
	// operator's ACL hid it (recipes/cache: nodes the session may not
	// read are outside its promises): unless a read of its own finds it
	// gone (which reads the parent again), its parent's children fields
	// stay as they were until the watches' re-read, twice the session
	// timeout later (World.ACLHidden). The rest is judged.
	loose := kind == "tree" && o.r.ACLHidden(0)
	s.judged++
	if err := o.instant(scope, loose, nodes); err != nil {
		return fmt.Errorf("%s snapshot of %s: %w", kind, snap.Path, err)
	}
	return nil
}

// distinct judges that a watcher's delivery is a new version: its
// previous one (prev, nil before the first) held other nodes.
func distinct(prev *Snapshot, snap Snapshot) error {
	if prev == nil || prev.Exists != snap.Exists || len(prev.Stats) != len(snap.Stats) {
		return nil
	}
	for k, st := range snap.Stats {
		if p, ok := prev.Stats[k]; !ok || p != st {
			return nil
		}
	}
	return fmt.Errorf("the same snapshot of %s (version %#x) delivered twice in a row", snap.Path, snap.Version())
}

// serverEqual compares a snapshot's nodes (by the names the snapshot
// keys them with, under base, a client's path) with the server's, read
// straight from its tree: the same nodes, data and Stats (but
// Aversion).
func serverEqual(what, base string, snap Snapshot, want map[string]sim.ServerNode) error {
	path := func(name string) string {
		if name == "" {
			return base
		}
		return base + "/" + name
	}
	for name, n := range want {
		st, ok := snap.Stats[name]
		switch {
		case !ok:
			return fmt.Errorf("%s: %s missing (server has %q)", what, path(name), n.Data)
		case string(snap.Values[name]) != string(n.Data) && snap.Values != nil:
			return fmt.Errorf("%s: %s delivered %q, server has %q", what, path(name), snap.Values[name], n.Data)
		case !statEqual(st, n.Stat):
			return fmt.Errorf("%s: %s delivered with Stat %+v, server has %+v", what, path(name), st, n.Stat)
		}
	}
	for name := range snap.Stats {
		if _, ok := want[name]; !ok {
			return fmt.Errorf("%s: %s delivered, not on the server", what, path(name))
		}
	}
	return nil
}

// serverNodes returns the nodes under root (a client's path) the server
// holds, keyed by their path relative to root, the markers left out.
func serverNodes(w *sim.World, root string, children bool) map[string]sim.ServerNode {
	known := []string{"/app/config", "/app/flag", "/app/config/" + MarkerName}
	for _, e := range simEntries {
		known = append(known, "/app/config/"+e)
	}
	out := map[string]sim.ServerNode{}
	for p, n := range sim.Subtree(w, root, known) {
		rel, ok := strings.CutPrefix(p, root+"/")
		if !ok || rel == MarkerName || strings.HasSuffix(rel, "/"+MarkerName) || children && strings.Contains(rel, "/") {
			continue
		}
		out[rel] = n
	}
	return out
}

// readersWroteNothing judges that no session of the readers' processes
// (clients 0 and 1) changed a node under /app.
func (s *configSim) readersWroteNothing(*sim.Trial) error {
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(s.readerSess)) {
		if p, ok := s.order.writers[id]; ok {
			errs = append(errs, fmt.Errorf("client %d's session %#x, a reader's, changed %s: readers create no node", s.readerSess[id], id, p))
		}
	}
	return errors.Join(errs...)
}

// followSessions records the sessions of reader client i's executor:
// the one it is on and those it connects to later.
func (s *configSim) followSessions(r *sim.Trial, i int) {
	ex := r.Execs[i]
	if sess, _ := ex.Current(); sess.ID != 0 {
		s.readerSess[sess.ID] = i
	}
	ex.Subscribe(func(ev task.Event) {
		if ev.Type == task.EventNone && ev.State == task.StateConnected && ev.SessionID != 0 {
			s.readerSess[ev.SessionID] = i
		}
	})
}

// delivered judges a watcher just started: it has delivered its first
// snapshot, unless the marker held it back (a reader that honours it).
func delivered(w *Watcher) error {
	if _, ok := w.Latest(); !ok && !w.opts.Marker {
		return fmt.Errorf("a watcher of %s started without delivering its first snapshot", w.path)
	}
	return nil
}

// convergedStats compares the last snapshots delivered, and the
// Reloader's run's, with the server's nodes, Stats included (but
// Aversion).
func (s *configSim) convergedStats(r *sim.Trial) error {
	dir := serverNodes(r.World, simRoot, true)
	snap, _ := s.dirW.Latest()
	if !snap.Exists {
		return fmt.Errorf("client 0: directory delivered as empty")
	}
	tsnap, _ := s.treeW.Latest()
	nsnap, _ := s.nodeW.Latest()
	node := map[string]sim.ServerNode{}
	if d, st, ok := r.NodeData(simNode); ok {
		node[""] = sim.ServerNode{Data: d, Stat: st}
	}
	if string(nsnap.Data) != string(node[""].Data) {
		return fmt.Errorf("client 0: node %s delivered %q, server has %q", simNode, nsnap.Data, node[""].Data)
	}
	return errors.Join(
		serverEqual("client 0: directory", simRoot, snap, dir),
		serverEqual("client 0: subtree", "/app", tsnap, serverNodes(r.World, "/app", false)),
		serverEqual("client 0: node", simNode, nsnap, node),
		serverEqual("client 1: the Reloader's run", simRoot, s.runSnap, dir))
}

package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
)

// ownIncarnations judges (Scenario.OwnIncarnations), from the server's
// journal, that a client's process deletes a persistent node at a path
// (or below it) only if it made that node or wrote it (that incarnation,
// by its czxid): a node another process or an operator made, at a path
// where this process's own node was before, is never deleted by it. It
// is the promise of a recipe that gives back only the incarnation it
// made or kept (discovery's Static instances): a delete sent again
// after a lost reply, or sent at any version, applies to whatever node
// is at the path then, and only the journal tells whose node went.
//
// One window is left out, as ZooKeeper leaves it: a delete names a
// version, not an incarnation (zkops.DeleteNode reads the node, then
// deletes it at the version read if it is its own). The latest node at
// the path before the one deleted that the process made or wrote was
// deleted by someone else (another process, the operator), and the
// process's connection was not lost from then until its delete: its read
// of its own node, answered late (a delay, a lagging member), let its
// delete at that version take a node made there since. A read answered
// before a cut is no excuse: the delete sent after the reconnect could
// have read again.
//
// A session is matched to its process (client and incarnation) by the
// executor's Connected event, which may come after the session's first
// requests are applied: the deletes are judged at the end of the seed
// (check), when every session a process used is known.
type ownIncarnations struct {
	path string // as the clients name it

	r       *Trial
	srvPath string                  // path on the server ("" until start)
	nodes   map[string]*incarnation // the node at path and at each path below it
	gone    map[string]*incarnation // the node last deleted at each of them
	// deleted are the deletes of persistent nodes not by a session that
	// touched them, judged at the end.
	deleted []incDelete
	zxid    int64 // the last commit's
}

// incarnation is one node: its czxid, the sessions that made or wrote it
// (0 for the server or an operator with no session), and, once deleted,
// whether the operator (or the server) deleted it.
type incarnation struct {
	czxid      int64
	ephemeral  bool
	touched    []int64
	byOperator bool
	deletedBy  int64        // the session that deleted it (0: the server or an operator)
	connects   []int        // once deleted: each client's World.procs connects then
	prev       *incarnation // the node deleted at the path before it was made (and so on back), or nil
}

// incDelete is the delete of a node by session (at zxid), none of the
// node's touching sessions.
type incDelete struct {
	path    string // the server's
	zxid    int64
	session int64
	node    incarnation
}

// start begins the judging on r's world, with the nodes at path and below
// it now (made before the judging began: by no process).
func (o *ownIncarnations) start(r *Trial) {
	o.r, o.srvPath = r, r.World.ServerPath(o.path)
	o.nodes, o.gone = map[string]*incarnation{}, map[string]*incarnation{}
	o.deleted = nil
	var add func(p string)
	add = func(p string) {
		st, ok := r.NodeStat(p)
		if !ok {
			return
		}
		o.nodes[r.World.ServerPath(p)] = &incarnation{czxid: st.Czxid, ephemeral: st.EphemeralOwner != 0}
		for _, name := range r.World.Children(p) {
			add(p + "/" + name)
		}
	}
	add(o.path)
}

// under reports whether p (the server's) is path or below it.
func (o *ownIncarnations) under(p string) bool {
	return strings.HasPrefix(p, o.srvPath) && (len(p) == len(o.srvPath) || p[len(o.srvPath)] == '/')
}

// journal hears each commit (fakezk.Config.Journal). Before start it
// does nothing.
func (o *ownIncarnations) journal(c fakezk.Commit) {
	if o.srvPath == "" {
		return
	}
	if c.Zxid <= o.zxid {
		// A wipe (Server.Wipe) lost the tree, unjournaled: what was
		// there is no one's delete.
		clear(o.nodes)
		clear(o.gone)
	}
	o.zxid = c.Zxid
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !o.under(n.Path) {
			continue
		}
		inc := o.nodes[n.Path]
		if inc != nil && inc.czxid != n.Stat.Czxid {
			// Another incarnation where a node was: a multi deleted
			// that one and made this one (the journal lists the path
			// once, as it is after).
			o.gone1(c, n.Path, inc)
			inc = nil
		}
		if inc == nil {
			inc = &incarnation{czxid: n.Stat.Czxid, ephemeral: n.Stat.EphemeralOwner != 0, prev: o.gone[n.Path]}
			o.nodes[n.Path] = inc
		}
		if !slices.Contains(inc.touched, c.Session) {
			inc.touched = append(inc.touched, c.Session)
		}
	}
	for _, p := range c.Deleted {
		if inc, ok := o.nodes[p]; ok {
			o.gone1(c, p, inc)
		}
	}
}

// gone1 records the delete of inc, the node at p, by c, keeping it for
// check unless its own process or an operator deleted it.
func (o *ownIncarnations) gone1(c fakezk.Commit, p string, inc *incarnation) {
	delete(o.nodes, p)
	inc.byOperator = c.Session == 0 || o.r.World.OperatorSession(c.Session)
	inc.deletedBy = c.Session
	inc.connects = make([]int, len(o.r.World.procs))
	for i := range o.r.World.procs {
		inc.connects[i] = o.r.World.procs[i].connects
	}
	if !inc.ephemeral && !inc.byOperator && !slices.Contains(inc.touched, c.Session) {
		o.deleted = append(o.deleted, incDelete{path: p, zxid: c.Zxid, session: c.Session, node: *inc})
	}
	o.gone[p] = inc
}

// check judges the deletes kept by journal, now that every session's
// process is known: a delete by a client's process of a node no session
// of that process made or wrote is a violation, but in the window above.
func (o *ownIncarnations) check() {
	if o.srvPath == "" {
		return
	}
	w := o.r.World
	ours := func(who procID, sessions []int64) bool {
		for _, s := range sessions {
			if p, ok := w.sessionProc[s]; ok && p == who {
				return true
			}
		}
		return false
	}
	for _, d := range o.deleted {
		who, ok := w.sessionProc[d.session]
		if !ok || ours(who, d.node.touched) {
			continue // an operator's session, or the process's own node
		}
		if o.window(who, &d.node, ours) {
			continue
		}
		cp, _ := w.ClientPath(d.path)
		o.r.Errorf("session %#x of client %d (process %d) deleted %s at zxid %#x, a persistent node (czxid %#x) made or written only by %s: a process deletes only a node it made or wrote",
			d.session, who.client, who.incarnation, cp, d.zxid, d.node.czxid, w.describeSessions(d.node.touched))
	}
}

// window reports whether the delete of node by process who is in
// ZooKeeper's window: the latest node before it at the path that who
// made or wrote was deleted by someone else, and who's connection was not
// lost from then until its delete.
func (o *ownIncarnations) window(who procID, node *incarnation, ours func(procID, []int64) bool) bool {
	for p := node.prev; p != nil; p = p.prev {
		if ours(who, p.touched) {
			return !ours(who, []int64{p.deletedBy}) && p.connects[who.client] == node.connects[who.client]
		}
	}
	return false
}

// procID is one process: a client and its incarnation (World.Incarnation).
type procID struct{ client, incarnation int }

// describeSessions names the processes of sessions (the server or an
// operator for the others).
func (w *World) describeSessions(sessions []int64) string {
	var b strings.Builder
	for k, s := range sessions {
		if k > 0 {
			b.WriteString(", ")
		}
		if p, ok := w.sessionProc[s]; ok {
			fmt.Fprintf(&b, "session %#x of client %d (process %d)", s, p.client, p.incarnation)
		} else if s == 0 {
			b.WriteString("the server or an operator")
		} else {
			fmt.Fprintf(&b, "session %#x (an operator's)", s)
		}
	}
	return b.String()
}

package fakezk

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// Persistence: what a server that keeps its tree on disk (the fakezk
// command's dataDir) needs from the in-memory one. Config.Journal hears of
// every zxid the server takes, with the nodes the transaction changed;
// Snapshot reads the whole tree; Restore builds a server from one.

// Node is one znode as the server stores it, for a journal or a snapshot.
// Data and ACL are shared with the server: read them, never modify them.
type Node struct {
	Path string
	Data []byte
	ACL  []task.ACL
	// Stat is the stored one, which differs from what clients see in two
	// fields: Cversion counts the creates under the node (the number its
	// next sequential child is named after; clients see
	// 2*Cversion-NumChildren), and EphemeralOwner is the owning session of
	// an ephemeral, math.MinInt64 for a container and 0xFF<<56|ttl (in
	// milliseconds) for a TTL node (clients see 0 for both).
	Stat task.Stat
}

// Commit is one zxid the server took: the nodes its transaction created or
// changed, as they are after it, and the paths it deleted. A zxid taken
// with no change to the tree (a failed write, a session's creation) comes
// with neither.
type Commit struct {
	Zxid int64
	// Session is the session whose request made the transaction (a
	// create, a delete, an error txn, its own creation), or whose end
	// did (its closing, which deletes its ephemerals), as ZooKeeper's
	// txn header names it; 0 for the server's own (the container
	// manager) and an operator's Admin change made with no session (one
	// made for a session, AdminCreate's ephemeral, names it).
	Session int64
	Nodes   []Node
	Deleted []string
}

// journal tells Config.Journal of zxid, taken by session sess (0: the
// server or an operator), with no change to the tree. Lock held.
func (s *Server) journal(zxid, sess int64) {
	if s.cfg.Journal == nil {
		return
	}
	s.cfg.Journal(Commit{Zxid: zxid, Session: sess})
}

// journalRef is a node a transaction changed, with its path: the node as
// the transaction found it, which a later change of the transaction may
// have removed (node.removed).
type journalRef struct {
	path string
	n    *node
}

// journalChanged tells Config.Journal of zxid, taken by session sess, with
// the nodes of refs, each as it now is, or its path deleted. refs is
// sorted here; a path's node is the one of its refs still in the tree, if
// any: no path is looked up again (the node a path names after the
// transaction is among its refs, as each change fires). Lock held.
func (s *Server) journalChanged(zxid, sess int64, refs []journalRef) {
	c := Commit{Zxid: zxid, Session: sess}
	slices.SortFunc(refs, func(a, b journalRef) int { return strings.Compare(a.path, b.path) })
	// Each path once, with its live node or nil, in place.
	out, live := refs[:0], 0
	for _, r := range refs {
		if r.n.removed {
			r.n = nil
		}
		if k := len(out); k > 0 && out[k-1].path == r.path {
			if out[k-1].n == nil && r.n != nil {
				out[k-1].n = r.n
				live++
			}
			continue
		}
		if r.n != nil {
			live++
		}
		out = append(out, r)
	}
	if live > 0 {
		c.Nodes = s.commitNodes(live)[:0]
	}
	if dead := len(out) - live; dead > 0 {
		c.Deleted = s.commitDeleted(dead)[:0]
	}
	for _, r := range out {
		if r.n != nil {
			c.Nodes = append(c.Nodes, r.n.stored())
		} else {
			c.Deleted = append(c.Deleted, r.path)
		}
	}
	s.cfg.Journal(c)
}

// commitChunk is how many Nodes commitNodes allocates at once.
const commitChunk = 32

// commitNodes returns room for a commit's n Nodes (length and capacity
// n), cut from a chunk of commitChunk unless n is large: one object per
// chunk rather than per commit, as most commits change a node or three
// (a chunk lives while one of its commits' Nodes is referred to; none is
// ever used twice, and an append to one does not reach the next). Lock
// held.
func (s *Server) commitNodes(n int) []Node {
	if n > commitChunk/4 {
		return make([]Node, n)
	}
	return s.spareCommits.Cut(n, commitChunk)
}

// commitDeleted returns room for a commit's n deleted paths, as
// commitNodes does, from the chunk copyNames cuts listings from. Lock
// held.
func (s *Server) commitDeleted(n int) []string {
	if n > namesChunk/4 {
		return make([]string, n)
	}
	return s.spareNames.Cut(n, namesChunk)
}

// journalTx journals a committed transaction: every node it fired a
// trigger for (created, changed, deleted, a parent whose children
// changed) and every node whose ACL it set. Lock held.
func (s *Server) journalTx(tx *txn) {
	if s.cfg.Journal == nil {
		return
	}
	if len(tx.fires) == 0 && len(tx.touched) == 0 {
		s.journal(tx.zxid, tx.session)
		return
	}
	// In a buffer of the server's, given back cleared.
	refs := s.journalRefs[:0]
	for _, f := range tx.fires {
		refs = append(refs, journalRef{f.path, f.n})
	}
	for _, n := range tx.touched {
		refs = append(refs, journalRef{n.path, n})
	}
	s.journalChanged(tx.zxid, tx.session, refs)
	clear(refs)
	s.journalRefs = refs[:0]
}

func (n *node) stored() Node {
	return Node{Path: n.path, Data: n.data, ACL: n.acl, Stat: n.stat}
}

// Snapshot returns the last zxid and every node, in path order: with
// Restore, the server's tree and counters. Sessions, watches and the
// clock are not part of it.
func (s *Server) Snapshot() (zxid int64, nodes []Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := s.tree.paths()
	nodes = make([]Node, 0, len(paths))
	for _, p := range paths {
		nodes = append(nodes, s.tree.nodes[p].stored())
	}
	return s.zxid, nodes
}

// ErrBadSnapshot is what Restore returns, wrapped with the reason, for
// nodes that do not make a tree.
var ErrBadSnapshot = errors.New("fakezk: not a consistent tree")

// Restore returns a server configured by cfg (as New) whose tree is nodes
// and whose last zxid is zxid, as Snapshot gave them, or a journal's
// commits replayed over them. nodes must hold "/" and each node's parent,
// once each, with NumChildren and DataLength that agree with them and no
// zxid above zxid; otherwise Restore returns an error wrapping
// ErrBadSnapshot (the order of nodes does not matter).
//
// Sessions are not restored: the ephemerals of each owner are deleted at
// once, in one transaction per owner (as its session's closing, with its
// zxid, told to cfg.Journal), as a real server does when a session expires
// while it is down. A container or TTL node due for deletion is deleted by
// the container manager's first run.
func Restore(cfg Config, zxid int64, nodes []Node) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, err := buildTree(zxid, nodes)
	if err != nil {
		return nil, err
	}
	s := New(cfg)
	s.mu.Lock()
	s.tree, s.zxid = t, zxid
	owners := map[int64][]string{}
	for _, n := range t.nodes {
		if n.isEphemeral() {
			owners[n.stat.EphemeralOwner] = append(owners[n.stat.EphemeralOwner], n.path)
		}
	}
	for _, owner := range slices.Sorted(maps.Keys(owners)) {
		paths := owners[owner]
		slices.Sort(paths)
		s.zxid++
		tx := &txn{zxid: s.zxid, now: s.nowMillis(), session: owner}
		s.tracef("restore: session id=%#x gone zxid=%d ephemerals=%v", owner, s.zxid, paths)
		for _, p := range paths {
			s.removeNode(tx, t.nodes[p])
		}
		s.commit(tx)
	}
	s.tracef("restore: %d nodes zxid=%d", len(t.nodes), s.zxid)
	s.startReaper()
	s.mu.Unlock()
	return s, nil
}

// buildTree makes a tree of nodes, checking what Restore promises.
func buildTree(zxid int64, nodes []Node) (*tree, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
	}
	sorted := slices.Clone(nodes)
	// Parents before children: a parent's path is a prefix of its
	// children's, so it sorts first.
	slices.SortFunc(sorted, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
	t := &tree{nodes: map[string]*node{}, special: map[*node]struct{}{}}
	for _, in := range sorted {
		if in.Path != "/" {
			if err := task.ValidatePath(in.Path, false); err != nil {
				return nil, bad("node %q: %v", in.Path, err)
			}
		}
		if t.nodes[in.Path] != nil {
			return nil, bad("node %s twice", in.Path)
		}
		st := in.Stat
		if st.Czxid > zxid || st.Mzxid > zxid || st.Pzxid > zxid {
			return nil, bad("node %s: zxid above the last (%d)", in.Path, zxid)
		}
		if int(st.DataLength) != len(in.Data) {
			return nil, bad("node %s: dataLength %d, data %d bytes", in.Path, st.DataLength, len(in.Data))
		}
		n := &node{path: in.Path, data: in.Data, acl: in.ACL, stat: st}
		if o := st.EphemeralOwner; o != containerOwner && o&ttlOwnerMask == ttlOwnerMask {
			n.ttl = o &^ ttlOwnerMask
		}
		if in.Path == "/" {
			t.put(n)
			continue
		}
		parent := t.nodes[parentOf(in.Path)]
		if parent == nil {
			return nil, bad("node %s: no parent", in.Path)
		}
		if parent.isEphemeral() {
			return nil, bad("node %s: parent is ephemeral", in.Path)
		}
		n.parent = parent
		parent.link(task.Base(in.Path), n)
		t.put(n)
		if n.reapable() {
			t.special[n] = struct{}{}
		}
	}
	if t.nodes["/"] == nil {
		return nil, bad("no root")
	}
	for _, n := range t.nodes {
		if int(n.stat.NumChildren) != len(n.children) {
			return nil, bad("node %s: numChildren %d, %d children", n.path, n.stat.NumChildren, len(n.children))
		}
	}
	return t, nil
}

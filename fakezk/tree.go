package fakezk

import (
	"fmt"
	"math"
	"slices"

	"github.com/zkflow/zkflow/task"
)

// Ephemeral owners ZooKeeper reserves for containers and TTL nodes
// (EphemeralType.CONTAINER and TTL): they show in Stat.EphemeralOwner.
const (
	containerOwner int64 = math.MinInt64
	ttlOwnerMask   int64 = -0x100000000000000 // 0xFF00000000000000
)

type node struct {
	path     string
	data     []byte
	acl      []task.ACL
	stat     task.Stat
	children map[string]*node
	// names is children's names in order, built on demand (childNames).
	// A change of children makes it again with the change (a new slice:
	// the old one may be shared) if it was listed since the change
	// before, else drops it (nil): a directory listed after each change
	// is never sorted again, and one changed many times between listings
	// is copied at most once per listing.
	names  []string
	listed bool // childNames was called since the last change
	// removed: the node is out of the tree (deleted; a multi's rollback
	// puts it back), for those that hold it past a change (fired).
	removed bool
	parent  *node
	ttl     int64 // ms, TTL nodes only
}

func (n *node) isEphemeral() bool {
	o := n.stat.EphemeralOwner
	return o != 0 && o != containerOwner && o&ttlOwnerMask != ttlOwnerMask
}

// clientStat is the Stat a client sees, as DataNode.copyStat makes it from
// the stored one: the stored cversion counts creates only (it names
// sequential children), and the client is shown creates plus deletes,
// 2*cversion - numChildren, in int32 arithmetic; ephemeralOwner is shown
// only for session ephemerals (0 for containers and TTL nodes).
func (n *node) clientStat() task.Stat {
	st := n.stat
	st.Cversion = st.Cversion*2 - st.NumChildren
	if !n.isEphemeral() {
		st.EphemeralOwner = 0
	}
	return st
}

func (n *node) isContainer() bool { return n.stat.EphemeralOwner == containerOwner }

// reapable reports a node the container manager looks at: a container or
// a TTL node (reap.go).
func (n *node) reapable() bool { return n.isContainer() || n.ttl > 0 }

// tree is the znode namespace. It is owned by Server and guarded by its lock.
type tree struct {
	nodes map[string]*node
	// special holds every reapable node (DataTree's containers and ttls
	// sets), which the container manager scans.
	special map[*node]struct{}
	// sorted is every path in order, built on demand by paths and dropped
	// (nil) whenever a node is added or removed: checks that read the
	// tree at every step of a simulation sort it once per change.
	sorted []string
}

// nodeChunk is how many nodes newNode allocates at once.
const nodeChunk = 16

// newNode returns a new zero node, cut from a chunk of nodeChunk (one
// object per chunk rather than per create: a chunk lives while one of
// its nodes is referred to; none is ever used twice). Lock held.
func (s *Server) newNode() *node {
	return s.spareNodes.New(nodeChunk)
}

// put indexes n under its path.
func (t *tree) put(n *node) {
	t.nodes[n.path] = n
	n.removed = false
	t.sorted = nil
}

// remove drops n from the index.
func (t *tree) remove(n *node) {
	delete(t.nodes, n.path)
	n.removed = true
	t.sorted = nil
}

// lookup is the node at path as a 3.8.0 server's DataTree.getNode finds
// it: the root is also under "" ("Rather than fight it, let root have an
// alias"). Only a remote client's reads reach the server with "" (an
// in-process client's are refused on its side, reqcheck).
func (t *tree) lookup(path string) *node {
	if path == "" {
		path = "/"
	}
	return t.nodes[path]
}

// paths returns every path in order; the slice is shared until the next
// change: callers copy it before they hand it out.
func (t *tree) paths() []string {
	if t.sorted == nil {
		t.sorted = make([]string, 0, len(t.nodes))
		for p := range t.nodes {
			t.sorted = append(t.sorted, p)
		}
		slices.Sort(t.sorted)
	}
	return t.sorted
}

func newTree() *tree {
	t := &tree{nodes: map[string]*node{}, special: map[*node]struct{}{}}
	// The built-in nodes hold empty data, not none (a real server's
	// getData answers a 0-length buffer, not -1).
	root := &node{path: "/", data: []byte{}, acl: task.OpenACL, children: map[string]*node{}}
	t.put(root)
	// The nodes a fresh 3.8 server has (DataTree's constructor).
	zk := t.addRaw(root, "zookeeper")
	t.addRaw(zk, "quota")
	cfg := t.addRaw(zk, "config")
	// DataTree.addConfigNode: anyone may read the configuration, no one
	// but the super user write it or its ACL (ZOOKEEPER-2014). It is set
	// with setACL at version -1, which the node then shows as its aversion.
	cfg.acl, cfg.stat.Aversion = slices.Clone(configACL), -1
	return t
}

// configACL is /zookeeper/config's ACL (ZooDefs.Ids.READ_ACL_UNSAFE).
var configACL = []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}

func (t *tree) addRaw(parent *node, name string) *node {
	n := &node{path: task.Join(parent.path, name), data: []byte{}, acl: task.OpenACL, children: map[string]*node{}, parent: parent}
	parent.link(name, n)
	parent.stat.NumChildren = int32(len(parent.children))
	t.put(n)
	return n
}

// checkSorted verifies that the ordered index, when built, holds every
// path once, in order.
func (t *tree) checkSorted() error {
	if len(t.sorted) != len(t.nodes) {
		return fmt.Errorf("ordered index has %d paths, tree %d", len(t.sorted), len(t.nodes))
	}
	for i, p := range t.sorted {
		if t.nodes[p] == nil || i > 0 && t.sorted[i-1] >= p {
			return fmt.Errorf("ordered index: %s out of place or not a node", p)
		}
	}
	return nil
}

// isSpecial reports the paths ZooKeeper refuses to delete (isSpecialPath).
func isSpecial(path string) bool {
	switch path {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}

// link adds child under name; unlink removes name.
func (n *node) link(name string, child *node) {
	if n.children == nil { // most nodes are leaves: made at the first child
		n.children = map[string]*node{}
	}
	n.children[name] = child
	if n.keepNames() {
		// A new slice, not the old one changed: a caller may still
		// hold the old one. Sorting the names again at the next
		// listing cost more than the copy (a fencing log that a judge
		// lists at each of its writes).
		i, found := slices.BinarySearch(n.names, name)
		if found {
			return // the same name linked again: the names are the same
		}
		names := make([]string, len(n.names)+1)
		copy(names, n.names[:i])
		names[i] = name
		copy(names[i+1:], n.names[i:])
		n.names = names
	}
}

func (n *node) unlink(name string) {
	delete(n.children, name)
	if n.keepNames() {
		if i, ok := slices.BinarySearch(n.names, name); ok {
			n.names = slices.Concat(n.names[:i], n.names[i+1:])
		} else {
			n.names = nil
		}
	}
}

// keepNames reports whether a change of children should make names again
// (else it is dropped), and starts a new period between listings.
func (n *node) keepNames() bool {
	keep := n.names != nil && n.listed
	if !keep {
		n.names = nil
	}
	n.listed = false
	return keep
}

// childNames returns n's children's names in order; the slice is shared
// (never changed: a change makes a new one): callers copy it before they
// hand it out.
func (n *node) childNames() []string {
	if n.names == nil {
		n.names = make([]string, 0, len(n.children))
		for name := range n.children {
			n.names = append(n.names, name)
		}
		slices.Sort(n.names)
	}
	n.listed = true
	return n.names
}

// sortedChildren lists n's children in name order (for deterministic walks).
func (n *node) sortedChildren() []*node {
	names := n.childNames()
	out := make([]*node, len(names))
	for i, name := range names {
		out[i] = n.children[name]
	}
	return out
}

// walk visits every node depth-first in name order.
func (t *tree) walk(f func(*node)) {
	var rec func(*node)
	rec = func(n *node) {
		f(n)
		for _, c := range n.sortedChildren() {
			rec(c)
		}
	}
	rec(t.nodes["/"])
}

package fakezk

import (
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
	parent   *node
	ttl      int64 // ms, TTL nodes only
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
}

func newTree() *tree {
	t := &tree{nodes: map[string]*node{}, special: map[*node]struct{}{}}
	root := &node{path: "/", acl: task.OpenACL, children: map[string]*node{}}
	t.nodes["/"] = root
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
	n := &node{path: task.Join(parent.path, name), acl: task.OpenACL, children: map[string]*node{}, parent: parent}
	parent.children[name] = n
	parent.stat.NumChildren = int32(len(parent.children))
	t.nodes[n.path] = n
	return n
}

// isSpecial reports the paths ZooKeeper refuses to delete (isSpecialPath).
func isSpecial(path string) bool {
	switch path {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}

// sortedChildren lists n's children in name order (for deterministic walks).
func (n *node) sortedChildren() []*node {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
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

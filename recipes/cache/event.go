package cache

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// Node is a cached node: its path, its data (nil when the cache does not
// keep data) and its Stat as of the cache's last read.
type Node struct {
	Path string
	Data []byte
	Stat task.Stat
}

// Name is the last component of the node's path.
func (n Node) Name() string { return task.Base(n.Path) }

// EventType says what happened to a node between two reads of the cache.
type EventType uint8

const (
	// Added: the node is new to the cache.
	Added EventType = iota + 1
	// Removed: the node is gone.
	Removed
	// Changed: the same node (same czxid) has another Stat: new data
	// (mzxid differs) or, in a TreeCache, children created or deleted
	// (Cversion, NumChildren and Pzxid differ). Compare Node.Stat.Mzxid
	// with Prev.Stat.Mzxid to tell a data change (OnEvent's events; those
	// of Change.Events have no Prev).
	Changed
	// Recreated: a node of the same path is there, but it is not the one
	// the cache knew: it was deleted and created again between two reads
	// (its czxid differs). Treat it as Removed followed by Added.
	Recreated
)

func (t EventType) String() string {
	switch t {
	case Added:
		return "added"
	case Removed:
		return "removed"
	case Changed:
		return "changed"
	case Recreated:
		return "recreated"
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is one change the cache saw. Node is the node as read now (zero
// for Removed); Prev is the node as the cache knew it before (zero for
// Added).
type Event struct {
	Type EventType
	Path string
	Node Node
	Prev Node
}

func (e Event) String() string { return e.Type.String() + " " + e.Path }

// Change is what changed between two snapshots of a cache, each list
// sorted by path: Nodes is the later snapshot; Added and Recreated hold the
// nodes as they are now, Changed the nodes with another Stat (new data, or
// in a TreeCache new children), Removed the nodes as they were. A node
// deleted and re-created between the two snapshots is in Recreated only.
type Change struct {
	Nodes     []Node
	Added     []Node
	Removed   []Node
	Changed   []Node
	Recreated []Node
}

// Empty reports whether nothing changed.
func (c Change) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Changed)+len(c.Recreated) == 0
}

// Events lists the change as events, sorted by path. A Change keeps the
// earlier snapshot's nodes only for Removed: the Changed and Recreated
// events it lists have a zero Prev (OnEvent's have Prev set; compare a
// Changed node's Stat with the one you kept to tell a data change).
func (c Change) Events() []Event {
	var out []Event
	for _, n := range c.Added {
		out = append(out, Event{Type: Added, Path: n.Path, Node: n})
	}
	for _, n := range c.Removed {
		out = append(out, Event{Type: Removed, Path: n.Path, Prev: n})
	}
	for _, n := range c.Changed {
		out = append(out, Event{Type: Changed, Path: n.Path, Node: n})
	}
	for _, n := range c.Recreated {
		out = append(out, Event{Type: Recreated, Path: n.Path, Node: n})
	}
	slices.SortStableFunc(out, func(a, b Event) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return out
}

// classify says how cur differs from prev, both present; 0 if it does
// not. A different czxid is a different node, whatever its version says:
// a node deleted and re-created can have the same version and data; the
// same node with another Stat (its data or its children changed) is
// Changed.
func classify(prev, cur Node, versionOnly bool) EventType {
	if versionOnly { // canary: compares the version alone
		if prev.Stat.Version != cur.Stat.Version {
			return Changed
		}
		return 0
	}
	switch {
	case prev.Stat.Czxid != cur.Stat.Czxid:
		return Recreated
	case prev.Stat != cur.Stat:
		return Changed
	}
	return 0
}

// diff returns the change from a to b (maps by path).
func diff(a, b map[string]Node) Change {
	var ch Change
	if len(b) > 0 {
		ch.Nodes = make([]Node, 0, len(b))
	}
	var buf [32]string
	for _, p := range appendSortedPaths(buf[:0], b) {
		n := b[p]
		ch.Nodes = append(ch.Nodes, n)
		old, ok := a[p]
		if !ok {
			ch.Added = append(ch.Added, n)
			continue
		}
		switch classify(old, n, false) {
		case Recreated:
			ch.Recreated = append(ch.Recreated, n)
		case Changed:
			ch.Changed = append(ch.Changed, n)
		}
	}
	for _, p := range appendSortedPaths(buf[:0], a) {
		if _, ok := b[p]; !ok {
			ch.Removed = append(ch.Removed, a[p])
		}
	}
	return ch
}

func sortedPaths(m map[string]Node) []string {
	return appendSortedPaths(make([]string, 0, len(m)), m)
}

// appendSortedPaths appends the paths of m to out, sorted.
func appendSortedPaths(out []string, m map[string]Node) []string {
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func sortedNodes(m map[string]Node) []Node {
	out := make([]Node, 0, len(m))
	for _, p := range sortedPaths(m) {
		out = append(out, m[p])
	}
	return out
}

// curNodes is sortedNodes for a map whose keys are its nodes' paths (an
// engine's cur): the nodes sorted by path, in one allocation.
func curNodes(m map[string]Node) []Node {
	out := make([]Node, 0, len(m))
	for _, n := range m {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
	return out
}

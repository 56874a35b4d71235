package sim

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// ReadTree returns the data of every node under root (root excluded),
// keyed by path relative to root ("a", "a/b"): the paths come straight
// from the server's tree (World.Paths: root is a client's path), the data
// through client's session (retrying connection loss), so call it once
// the faults have stopped.
func ReadTree(w *World, client int, root string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range w.Paths() {
		rel, ok := strings.CutPrefix(p, root+"/")
		if !ok {
			continue
		}
		d, err := Run(w, client, c.Retry(task.Get(p), c.Policy{}))
		if errors.Is(err, task.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		out[rel] = string(d.Data)
	}
	return out, nil
}

// TreeEquals compares want (a cache's view: relative path -> data) with
// the server's tree under root, read with ReadTree, and describes every
// difference.
func TreeEquals(w *World, client int, root string, want map[string]string) error {
	got, err := ReadTree(w, client, root)
	if err != nil {
		return err
	}
	return diffMaps(root, want, got)
}

// ChildrenEqual compares want (a children cache's view) with dir's
// children on the server. It looks up dir and each name of want alone;
// only when they differ (to say how) does it list the server's tree.
func ChildrenEqual(w *World, dir string, want []string) error {
	want = slices.Clone(want)
	sort.Strings(want)
	if st, ok := w.NodeStat(dir); ok && int(st.NumChildren) == len(want) && namesPresent(w, dir, want) {
		return nil // as many children as want's names, each of them there
	}
	got := w.Children(dir)
	if !slices.Equal(got, want) {
		return fmt.Errorf("children of %s: cache has %v, server has %v", dir, want, got)
	}
	return nil
}

// namesPresent reports whether names (sorted) are distinct children of
// dir, all on the server.
func namesPresent(w *World, dir string, names []string) bool {
	for i, n := range names {
		if n == "" || strings.Contains(n, "/") || i > 0 && names[i-1] == n {
			return false
		}
		if _, ok := w.NodeStat(task.Join(dir, n)); !ok {
			return false
		}
	}
	return true
}

// ServerNode is a node as the server holds it, read straight from its
// tree (no session, no request).
type ServerNode struct {
	Data []byte
	Stat task.Stat
}

// Subtree returns root and every node under it (client paths) as the
// server holds them; an empty map if root is missing. known lists the
// paths the scenario may make under root: Subtree looks up root and each
// of them alone, and lists the server's whole tree (World.Paths, every
// path sorted) only if some node's NumChildren counts a child outside
// known. So a judge that calls it at every check pays a few lookups, and
// still sees every node: a node outside known makes the count of its
// nearest ancestor found differ.
func Subtree(w *World, root string, known []string) map[string]ServerNode {
	out := map[string]ServerNode{}
	look := func(p string) {
		if _, done := out[p]; done {
			return
		}
		if d, st, ok := w.NodeData(p); ok {
			out[p] = ServerNode{Data: d, Stat: st}
		}
	}
	look(root)
	if len(out) == 0 {
		return out
	}
	for _, p := range known {
		if under(p, root) {
			look(p)
		}
	}
	kids := make(map[string]int32, len(out))
	for p := range out {
		if p != root {
			kids[task.Parent(p)]++
		}
	}
	for p, n := range out {
		if n.Stat.NumChildren != kids[p] {
			return subtreeListed(w, root)
		}
	}
	return out
}

// subtreeListed is Subtree from the server's whole list of paths.
func subtreeListed(w *World, root string) map[string]ServerNode {
	out := map[string]ServerNode{}
	for _, p := range w.Paths() {
		if under(p, root) || p == root {
			if d, st, ok := w.NodeData(p); ok {
				out[p] = ServerNode{Data: d, Stat: st}
			}
		}
	}
	return out
}

// under reports whether p is strictly below root.
func under(p, root string) bool {
	if root == "/" {
		return p != "/" && strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, root+"/")
}

func diffMaps(root string, want, got map[string]string) error {
	var diffs []string
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s/%s: cache has %q, server has no node", root, k, want[k]))
		case g != want[k]:
			diffs = append(diffs, fmt.Sprintf("%s/%s: cache has %q, server has %q", root, k, want[k], g))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s/%s: server has %q, cache has no entry", root, k, got[k]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("cache differs from the server: %s", strings.Join(diffs, "; "))
	}
	return nil
}

func sortedKeys[K interface{ ~int | ~string | ~int64 }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

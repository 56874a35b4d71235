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
// children on the server.
func ChildrenEqual(w *World, dir string, want []string) error {
	got := w.Children(dir)
	want = slices.Clone(want)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("children of %s: cache has %v, server has %v", dir, want, got)
	}
	return nil
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

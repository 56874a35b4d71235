package cache

import (
	"bytes"
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// sameNodes compares two node sets by path, data and the Stat fields a
// cache promises (statFields: with whole, every field but Aversion; else
// the fields a data watch follows). Every cache of the scenario keeps the
// data.
func sameNodes(got, want map[string]Node, whole bool) error {
	for _, p := range sortedPaths(want) {
		g, ok := got[p]
		w := want[p]
		switch {
		case !ok:
			return fmt.Errorf("%s: missing (server has czxid %d version %d)", p, w.Stat.Czxid, w.Stat.Version)
		case statFields(g.Stat, whole) != statFields(w.Stat, whole):
			return fmt.Errorf("%s: Stat %+v, server %+v", p, g.Stat, w.Stat)
		case !bytes.Equal(g.Data, w.Data):
			return fmt.Errorf("%s: data %q, server %q", p, g.Data, w.Data)
		}
	}
	for _, p := range sortedPaths(got) {
		if _, ok := want[p]; !ok {
			return fmt.Errorf("%s: cached, but not on the server", p)
		}
	}
	return nil
}

// applyEvent applies one OnEvent to m, checking it is consistent with m.
func applyEvent(m map[string]Node, ev Event) error {
	old, ok := m[ev.Path]
	switch ev.Type {
	case Added:
		if ok {
			return fmt.Errorf("event %s: already cached", ev)
		}
	case Removed, Changed, Recreated:
		if !ok {
			return fmt.Errorf("event %s: not cached", ev)
		}
		if ev.Prev.Stat != old.Stat {
			return fmt.Errorf("event %s: Prev is not the cached node", ev)
		}
		if ev.Type == Changed && ev.Node.Stat.Czxid != old.Stat.Czxid {
			return fmt.Errorf("event %s: czxid %d, was %d: a re-created node reported as changed", ev, ev.Node.Stat.Czxid, old.Stat.Czxid)
		}
		if ev.Type == Recreated && ev.Node.Stat.Czxid == old.Stat.Czxid {
			return fmt.Errorf("event %s: same czxid %d", ev, old.Stat.Czxid)
		}
	default:
		return fmt.Errorf("event %s: unknown type", ev)
	}
	if ev.Type == Removed {
		delete(m, ev.Path)
	} else {
		m[ev.Path] = ev.Node
	}
	return nil
}

// applyChange applies a Next's difference to m (the previous snapshot),
// checking it against m, and that the result is the reported snapshot.
func applyChange(m map[string]Node, ch Change) error {
	if ch.Empty() {
		return fmt.Errorf("Next returned no change")
	}
	for _, ev := range ch.Events() {
		old, ok := m[ev.Path]
		switch ev.Type {
		case Added:
			if ok {
				return fmt.Errorf("Next: %s: was already there", ev)
			}
		case Removed:
			if !ok || old.Stat != ev.Prev.Stat {
				return fmt.Errorf("Next: %s: was not there as reported", ev)
			}
		case Changed, Recreated:
			if !ok {
				return fmt.Errorf("Next: %s: was not there", ev)
			}
			if (ev.Node.Stat.Czxid == old.Stat.Czxid) != (ev.Type == Changed) {
				return fmt.Errorf("Next: %s: czxid %d, was %d", ev, ev.Node.Stat.Czxid, old.Stat.Czxid)
			}
		}
		if ev.Type == Removed {
			delete(m, ev.Path)
		} else {
			m[ev.Path] = ev.Node
		}
	}
	if len(m) != len(ch.Nodes) {
		return fmt.Errorf("Next: snapshot has %d nodes, previous plus difference %d", len(ch.Nodes), len(m))
	}
	for _, n := range ch.Nodes {
		if o, ok := m[n.Path]; !ok || o.Stat != n.Stat {
			return fmt.Errorf("Next: snapshot node %s is not the previous plus difference", n.Path)
		}
	}
	return nil
}

// statFields keeps the fields of st a cache promises to keep current:
// with whole (a TreeCache), every field but Aversion (a setACL fires no
// watch); without (a NodeCache's node, a ChildrenCache's children), the
// fields a data watch follows, and not the children's (Cversion,
// NumChildren, Pzxid), which are as of the node's last read.
func statFields(st task.Stat, whole bool) task.Stat {
	st.Aversion = 0
	if !whole {
		st.Cversion, st.NumChildren, st.Pzxid = 0, 0, 0
	}
	return st
}

// withRecursive is WithRecursive if on, else an option that sets nothing.
func withRecursive(on bool) Option {
	if on {
		return WithRecursive()
	}
	return optionFunc(func(*options) {})
}

// second is the error of a constructor's result.
func second[T any](_ T, err error) error { return err }

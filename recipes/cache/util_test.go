package cache

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
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

// serverHistory is the server's nodes over time, from its journal
// (fakezk.Config.Journal): each path's versions in zxid order, each from
// the zxid that made it until the next one's. It judges the doc's
// promise that Next shows consistent snapshots: every node as of one
// instant of the server's history, and never an instant before the one
// the previous Next showed (snapJudge). The counter faults set a
// directory's Cversion with no transaction, so Cversion is not compared.
type serverHistory struct {
	w     *sim.World
	paths map[string][]nodeVersion // by server path
}

type nodeVersion struct {
	from    int64 // the zxid that made it
	present bool
	stat    task.Stat // as stored (fakezk.Node)
	data    []byte
}

func (h *serverHistory) reset(w *sim.World) {
	*h = serverHistory{w: w, paths: map[string][]nodeVersion{}}
}

// Journal is the server's Config.Journal (server lock held).
func (h *serverHistory) Journal(c fakezk.Commit) {
	if h.w == nil {
		return
	}
	for _, n := range c.Nodes {
		h.paths[n.Path] = append(h.paths[n.Path], nodeVersion{from: c.Zxid, present: true, stat: n.Stat, data: bytes.Clone(n.Data)})
	}
	for _, d := range c.Deleted {
		h.paths[d] = append(h.paths[d], nodeVersion{from: c.Zxid})
	}
}

// snapJudge is what one cache's Next loop has shown: which server paths
// the cache follows, whether it keeps the children's Stat fields (a
// TreeCache), and the first instant (zxid) its last snapshot can be.
type snapJudge struct {
	h     *serverHistory
	r     *sim.Trial
	scope func(serverPath string) bool
	whole bool
	at    int64
	// client is the client whose cache is judged.
	client int
}

// aclExcused reports whether a snapshot taken now is outside the
// package's promises (doc.go, "Nodes the session may not read"): an
// operator's ACL is changed, or came back less than the watches'
// re-read period (twice the session timeout) and a second ago, or the
// client's session was away when a re-read fell due and came back less
// than that ago (World.ACLHidden).
func (j *snapJudge) aclExcused() bool { return j.r.ACLHidden(j.client) }

// span is the zxids [lo, hi).
type span struct{ lo, hi int64 }

// intersect returns the zxids in both a and b (each sorted, disjoint).
func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo < hi {
			out = append(out, span{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// same reports whether the cached n is version v, by the fields the cache
// keeps.
func (j *snapJudge) same(v nodeVersion, n Node) bool {
	owner := v.stat.EphemeralOwner
	if owner == math.MinInt64 || uint64(owner)>>56 == 0xFF {
		owner = 0 // a container or TTL node: clients see 0
	}
	g, s := n.Stat, v.stat
	if g.Czxid != s.Czxid || g.Mzxid != s.Mzxid || g.Version != s.Version || g.EphemeralOwner != owner || !bytes.Equal(n.Data, v.data) {
		return false
	}
	return !j.whole || g.Pzxid == s.Pzxid && g.NumChildren == s.NumChildren
}

// check judges snapshot nodes (client paths): at some zxid at or after
// the previous snapshot's, every followed node the server held is in it,
// as it was then, and no other.
func (j *snapJudge) check(nodes []Node) error {
	if j.aclExcused() {
		return nil
	}
	w := j.h.w
	cached := map[string]Node{}
	for _, n := range nodes {
		cached[w.ServerPath(n.Path)] = n
	}
	ok := []span{{j.at, math.MaxInt64}}
	paths := slices.Sorted(maps.Keys(j.h.paths))
	for _, p := range paths {
		if !j.scope(p) {
			continue
		}
		vs := j.h.paths[p]
		n, in := cached[p]
		var allowed []span
		if !in {
			allowed = append(allowed, span{math.MinInt64, vs[0].from})
		}
		// Versions that ended before the earliest zxid still possible
		// (ok[0].lo) cannot matter: start at the one holding it.
		first := max(sort.Search(len(vs), func(i int) bool { return vs[i].from > ok[0].lo })-1, 0)
		for i := first; i < len(vs); i++ {
			v := vs[i]
			end := int64(math.MaxInt64)
			if i+1 < len(vs) {
				end = vs[i+1].from
			}
			if in && v.present && j.same(v, n) || !in && !v.present {
				if k := len(allowed) - 1; k >= 0 && allowed[k].hi == v.from {
					allowed[k].hi = end
				} else {
					allowed = append(allowed, span{v.from, end})
				}
			}
		}
		if ok = intersect(ok, allowed); len(ok) == 0 {
			if in {
				return fmt.Errorf("Next's snapshot is no state of the server at or after zxid %d: %s cached with czxid %d mzxid %d pzxid %d version %d, %d children", j.at, n.Path, n.Stat.Czxid, n.Stat.Mzxid, n.Stat.Pzxid, n.Stat.Version, n.Stat.NumChildren)
			}
			return fmt.Errorf("Next's snapshot is no state of the server at or after zxid %d: %s not cached", j.at, p)
		}
	}
	for p, n := range cached {
		if _, known := j.h.paths[p]; !known {
			return fmt.Errorf("Next's snapshot holds %s, never on the server", n.Path)
		}
	}
	j.at = ok[0].lo
	return nil
}

// newSnapJudge returns the snapshot judge of a new Next loop over a cache
// of kind "children" (simDir's children), "node" (simNode) or "tree"
// (/cache and everything under it).
func newSnapJudge(h *serverHistory, r *sim.Trial, kind string, client int) *snapJudge {
	j := &snapJudge{h: h, r: r, whole: kind == "tree", at: math.MinInt64, client: client}
	switch dir, node, root := r.ServerPath(simDir), r.ServerPath(simNode), r.ServerPath("/cache"); kind {
	case "children":
		j.scope = func(p string) bool { return path.Dir(p) == dir }
	case "node":
		j.scope = func(p string) bool { return p == node }
	default:
		j.scope = func(p string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	}
	return j
}

package barrier

// Presence, shared by the double-barrier scenarios of both test packages.

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
)

// Presence follows, from the server's journal (fakezk.Config.Journal),
// the participant nodes of each round's directory of a double barrier,
// and the most sessions that had one there at once since the round
// began: the judge of "Enter passes only after some participant listed
// Size participant nodes" (a listing sees at most that many). The
// operator's nodes do not count. A Wipe, which no journal hears of,
// leaves nodes counted that are gone: the judge is weaker, never wrong.
type Presence struct {
	w     *sim.World
	round map[string]int     // a round's directory (server path): its index
	nodes []map[string]int64 // per round: participant node (server path): its owner
	most  []int              // per round: the most owners present at once
	ever  map[string]bool    // every participant node made (server path)
	// twice: the first time a session had two participant nodes in one
	// round's directory at once, or "" (one participant counting twice).
	twice string
}

// Reset follows the rounds whose directories (client paths) are dirs.
func (p *Presence) Reset(w *sim.World, dirs []string) {
	p.w, p.round, p.ever = w, map[string]int{}, map[string]bool{}
	p.nodes, p.most = make([]map[string]int64, len(dirs)), make([]int, len(dirs))
	p.twice = ""
	for k, d := range dirs {
		p.round[w.ServerPath(d)] = k
		p.nodes[k] = map[string]int64{}
	}
}

// Journal is the server's Config.Journal (server lock held: it reads
// only the world's own records).
func (p *Presence) Journal(c fakezk.Commit) {
	if p.w == nil {
		return
	}
	touched := map[int]bool{}
	note := func(node string, owner int64, gone bool) {
		k, ok := p.round[path.Dir(node)]
		if !ok || !strings.HasPrefix(path.Base(node), "_p_") {
			return
		}
		if gone || owner == 0 || p.w.OperatorSession(owner) {
			delete(p.nodes[k], node)
		} else {
			p.nodes[k][node] = owner
			p.ever[node] = true
		}
		touched[k] = true
	}
	for _, n := range c.Nodes {
		note(n.Path, n.Stat.EphemeralOwner, false)
	}
	for _, d := range c.Deleted {
		note(d, 0, true)
	}
	for k := range touched {
		owners := map[int64][]string{}
		for n, o := range p.nodes[k] {
			owners[o] = append(owners[o], n)
		}
		if p.twice == "" {
			for _, o := range slices.Sorted(maps.Keys(owners)) { // map order must not show
				if ns := owners[o]; len(ns) > 1 {
					slices.Sort(ns)
					p.twice = fmt.Sprintf("session %#x had two participant nodes at once, %s and %s (zxid %#x)", o, ns[0], ns[1], c.Zxid)
					break
				}
			}
		}
		p.most[k] = max(p.most[k], len(owners))
	}
}

// Twice says when a session first had two participant nodes in one
// round's directory at once ("" if never): one participant counting
// twice. A DoubleClient's never does (its Enter waits for its own
// clean-ups and Leave's delete); the task face keeps no state between
// Enters and promises it only of each Enter.
func (p *Presence) Twice() string { return p.twice }

// Most is the most sessions that had a participant node in round k's
// directory at once so far.
func (p *Presence) Most(k int) int { return p.most[k] }

// Made reports whether a participant's node at path (a client's path) was
// ever made: a participant that passed Enter must have one, or Leaves
// would not wait for it.
func (p *Presence) Made(path string) bool { return p.ever[p.w.ServerPath(path)] }

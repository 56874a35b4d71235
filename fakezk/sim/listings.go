package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/chunk"
)

// Listings keeps the history of one directory's children on the server,
// so that a judge can hold a view (group's, a cache's children) to "every
// report is a listing of the directory as the server had it at some
// moment after the previous report": not a set that never existed, not
// one older than the report before it.
//
// It hears every change from the server's journal: set Journal as the
// scenario's Server.Journal, call Start in Setup (the history begins with
// the directory's children then), Mark when a view starts and after each
// of its reports, and Since for each report. Everything runs on the
// simulation's goroutine, in the one order the server and the executors
// take steps in, so "after" is exact.
type Listings struct {
	// Dir is the directory, as the clients name it.
	Dir string

	srvDir string           // Dir on the server ("" until Start)
	prefix string           // srvDir + "/", which child cuts from every path journaled
	cur    map[string]bool  // the children now
	hist   []listing        // every listing the directory had since Start, in order
	tick   uint64           // moments: one per change and per Mark
	spare  chunk.Of[string] // the rest of the chunk newNames cuts listings from
}

// listing is one set of children and the moment it began.
type listing struct {
	from  uint64
	names []string // sorted
}

// Start begins the history with dir's children on w's server now,
// forgetting an earlier seed's.
func (l *Listings) Start(w *World) {
	l.srvDir = w.ServerPath(l.Dir)
	l.prefix = l.srvDir + "/"
	l.cur = map[string]bool{}
	for _, n := range w.Children(l.Dir) {
		l.cur[n] = true
	}
	l.tick = 1
	l.hist = append(l.hist[:0], listing{from: l.tick, names: w.Children(l.Dir)})
}

// Journal is for fakezk.Config.Journal: it records each change to the
// directory's children. Before Start (the world's own setup) it records
// nothing.
func (l *Listings) Journal(c fakezk.Commit) {
	if l.srvDir == "" {
		return
	}
	changed := false
	for i := range c.Nodes {
		if name, ok := l.child(c.Nodes[i].Path); ok && !l.cur[name] {
			l.cur[name], changed = true, true
		}
	}
	for _, p := range c.Deleted {
		if name, ok := l.child(p); ok && l.cur[name] {
			delete(l.cur, name)
			changed = true
		}
	}
	if changed {
		l.tick++
		names := l.newNames(len(l.cur))[:0]
		for name := range l.cur {
			names = append(names, name)
		}
		slices.Sort(names)
		l.hist = append(l.hist, listing{from: l.tick, names: names})
	}
}

// namesChunk is how many names newNames allocates at once.
const namesChunk = 256

// newNames returns room for a listing of n names (length and capacity
// n), cut from a chunk of namesChunk unless n is 0 or large: one object
// per chunk rather than per change of the directory (the history keeps
// every listing until the next Start; none is ever used twice).
func (l *Listings) newNames(n int) []string {
	if n == 0 || n > namesChunk/4 {
		return make([]string, n)
	}
	return l.spare.Cut(n, namesChunk)
}

// child reports the name of p if it is a child of the directory.
func (l *Listings) child(p string) (string, bool) {
	name, ok := strings.CutPrefix(p, l.prefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// Mark returns the present moment: call it when a view starts and right
// after each report, and pass it to Since for the next report.
func (l *Listings) Mark() uint64 {
	l.tick++
	return l.tick
}

// Since returns nil if names (sorted) were the directory's children at
// some moment after since (a Mark, or a moment Since returned), up to
// now, and otherwise an error naming the listings it could have been.
// It also returns the earliest such moment: a judge that cannot Mark
// right after a report (a blocking Next, whose reports are coalesced)
// passes it as the next since, holding the next report to a listing no
// older than this one.
func (l *Listings) Since(names []string, since uint64) (uint64, error) {
	if l.srvDir == "" {
		return since, nil
	}
	// The listing current at since, and every one after it.
	j := max(sort.Search(len(l.hist), func(j int) bool { return l.hist[j].from > since })-1, 0)
	for _, h := range l.hist[j:] {
		if slices.Equal(h.names, names) {
			return max(h.from, since), nil
		}
	}
	var had []string
	for _, h := range l.hist[j:] {
		had = append(had, fmt.Sprint(h.names))
	}
	return since, fmt.Errorf("%v was never the listing of %s since the previous report (it was, in turn: %s)", names, l.Dir, strings.Join(had, " "))
}

package masterworker_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
)

// fenceJudge judges, from the server's journal, the package doc's "every
// move is one multi fenced by the primary's lease": each transaction that
// moves a task (deletes it from /tasks, makes an assignment, or moves an
// assignment back to /tasks; and a master's failed status for a task
// whose move is too large, which deletes an assignment) is made by a
// session that made the lease in place then (an incarnation of its path:
// an operator may delete a lease and make it again, which the fence's
// check at version 0 cannot tell from the lease itself). A move made
// without the fence, or fenced on another node, passes every other
// checker: a stale primary's late move only makes work again. It also
// counts the moves, which bound what the masters' Stats may report.
//
// It runs in the server's Journal (with the server's lock held: it reads
// the commits only); its first violation is reported by the tree check
// (instant) and by final.
type fenceJudge struct {
	// The directories' server paths with a trailing "/" ("" until
	// start).
	tasks, assign, status, leases string
	live                          map[string]bool    // the leases in place (server paths)
	made                          map[string][]int64 // per lease path, the sessions that made an incarnation of it
	assigned, movedBack           int64              // the moves of either kind, by the primaries' multis
	zxid                          int64
	err                           error
}

// start begins the judging once Setup has made the layout (no master has
// run: no lease is in place).
func (f *fenceJudge) start(r *sim.Trial) {
	p := func(dir string) string { return strings.TrimSuffix(r.ServerPath(simRoot+dir), "/") + "/" }
	*f = fenceJudge{tasks: p("/tasks"), assign: p("/assign"), status: p("/status"), leases: p("/master.leases"),
		live: map[string]bool{}, made: map[string][]int64{}}
}

// depth reports whether p is below dir (with its trailing "/") by n
// components exactly.
func depth(p, dir string, n int) bool {
	rest, ok := strings.CutPrefix(p, dir)
	return ok && rest != "" && strings.Count(rest, "/") == n-1 && !strings.HasSuffix(rest, "/")
}

// journal hears each commit (fakezk.Config.Journal).
func (f *fenceJudge) journal(c fakezk.Commit) {
	if f.tasks == "" {
		return
	}
	if c.Zxid <= f.zxid {
		clear(f.live) // a tree lost unjournaled (a wipe): no lease is known
	}
	f.zxid = c.Zxid
	var delTask, delAssign, newTask, newAssign, newStatus bool
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Stat.Czxid != c.Zxid {
			continue // changed, not made
		}
		newTask = newTask || depth(n.Path, f.tasks, 1)
		newAssign = newAssign || depth(n.Path, f.assign, 2)
		newStatus = newStatus || depth(n.Path, f.status, 1)
	}
	for _, p := range c.Deleted {
		delTask = delTask || depth(p, f.tasks, 1)
		delAssign = delAssign || depth(p, f.assign, 2)
	}
	move := false
	switch {
	case delTask || newAssign:
		f.assigned++
		move = true
	case newTask && delAssign:
		f.movedBack++
		move = true
	case newStatus && delAssign && f.holds(c.Session):
		f.movedBack++ // a master's failed status for an assignment it could not move
	}
	if move && !f.holds(c.Session) && f.err == nil {
		f.err = fmt.Errorf("zxid %d: session %#x moved a task (made %v, deleted %v) with no lease of its own in place (leases %v): a move not fenced by the primary's lease",
			c.Zxid, c.Session, f.paths(c), c.Deleted, f.describe())
	}
	// The leases, after the moves are judged (a move's multi changes none).
	for _, p := range c.Deleted {
		if depth(p, f.leases, 1) {
			delete(f.live, p)
		}
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Stat.Czxid == c.Zxid && depth(n.Path, f.leases, 1) {
			f.live[n.Path] = true
			if !slices.Contains(f.made[n.Path], c.Session) {
				f.made[n.Path] = append(f.made[n.Path], c.Session)
			}
		}
	}
}

// holds reports whether session made (an incarnation of) a lease in place.
func (f *fenceJudge) holds(session int64) bool {
	for p := range f.live {
		if slices.Contains(f.made[p], session) {
			return true
		}
	}
	return false
}

// paths lists the nodes c made, for a message.
func (f *fenceJudge) paths(c fakezk.Commit) []string {
	var out []string
	for _, n := range c.Nodes {
		if n.Stat.Czxid == c.Zxid {
			out = append(out, n.Path)
		}
	}
	return out
}

// describe lists the leases in place with their makers, for a message.
func (f *fenceJudge) describe() []string {
	var out []string
	for p := range f.live {
		out = append(out, fmt.Sprintf("%s made by %#x", p, f.made[p]))
	}
	slices.Sort(out)
	return out
}

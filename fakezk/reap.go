package fakezk

import (
	"fmt"
	"slices"
	"time"

	"github.com/zkflow/zkflow/task"
)

// The container manager: ZooKeeper 3.8's ContainerManager on the server's
// clock. The server starts it with itself (again after a Restart); it runs
// at a fixed rate, every Config.ContainerCheckInterval from that start
// (java.util.Timer.scheduleAtFixedRate: a run that overruns its period is
// followed at once by the next). A run collects its candidates (getCandidates):
//
//   - containers with no children whose stored cversion is > 0, that is,
//     that have had a child;
//   - if Config.ContainerMaxNeverUsed > 0, containers with no children
//     that never had one, once more than that has passed since their mtime;
//   - TTL nodes with no children once more than their TTL has passed since
//     their mtime;
//
// and sends a deleteContainer request for each, in no promised order (a
// HashSet's; here drawn from the seed), pausing a minute /
// ContainerMaxPerMinute after each (the last included) before the next or
// the run's end. Each request is a transaction of its own, decided when it
// is applied (PrepRequestProcessor): the node must still exist
// (NoNode), have no children (NotEmpty) and not be a session's ephemeral
// (BadVersion); it is not re-checked for being a candidate, so a TTL node
// written to during the pause is still deleted. A failed one takes a zxid
// as every failed write does.
//
// A run that finds nothing changes nothing, so the fake arms its timer
// only for the first run at which some node is a candidate (now, or by
// time alone: the TTL or never-used interval passing), and a server with
// no such node has no timer pending: simulations that advance the clock
// until no timer is left still end.

// reaper is the container manager's state. Lock held for all of it.
type reaper struct {
	base  time.Time  // when the manager started: runs fall due at base + k*interval
	last  time.Time  // the fixed-rate slot of the latest run (base if none)
	until time.Time  // when the latest run ends, after its last pause
	timer task.Timer // the next run, or the running run's next deletion; nil if idle
	at    time.Time  // when timer fires
	slot  time.Time  // the slot of the run timer starts
	gen   uint64     // tells a stale timer from the armed one
	queue []string   // the running run's candidates not yet sent
	stale bool       // a change may have put off or cancelled the armed run
}

// startReaper starts the container manager (server start). Lock held.
func (s *Server) startReaper() {
	now := s.clock.Now()
	s.stopReaper()
	s.reap.base, s.reap.last, s.reap.until = now, now, now
	s.scheduleReap()
}

// stopReaper stops it (server stop, Close): a run in progress ends.
func (s *Server) stopReaper() {
	r := &s.reap
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.gen++
	r.queue = nil
}

// reapDue reports when n becomes a candidate (the zero time: it is one
// already), or false if time alone never makes it one.
func (s *Server) reapDue(n *node) (time.Time, bool) {
	if len(n.children) > 0 {
		return time.Time{}, false
	}
	switch {
	case n.isContainer():
		if n.stat.Cversion > 0 {
			return time.Time{}, true
		}
		if ms := s.cfg.ContainerMaxNeverUsed.Milliseconds(); ms > 0 {
			return time.UnixMilli(n.stat.Mtime + ms + 1), true
		}
	case n.ttl > 0:
		// Candidate once now - mtime > ttl, in milliseconds.
		return time.UnixMilli(n.stat.Mtime + n.ttl + 1), true
	}
	return time.Time{}, false
}

// runTime returns when the first run at or after due starts, and its
// slot. A slot at the present instant counts as run already (the clock
// fires timers due at an instant before anything else happens at it).
func (s *Server) runTime(due time.Time) (at, slot time.Time) {
	r := &s.reap
	p := s.cfg.ContainerCheckInterval
	now := s.clock.Now()
	if !due.After(now) {
		due = now.Add(1)
	}
	next := r.last.Add(p)
	if !r.until.Before(due) {
		// The latest run ends after due: the next slot's run starts when
		// it ends, if it is behind.
		if r.until.After(next) {
			return r.until, next
		}
		return next, next
	}
	if next.Before(due) {
		k := (due.Sub(r.base) + p - 1) / p
		next = r.base.Add(k * p)
	}
	return next, next
}

// reapCommitted keeps the container manager's timer armed for exactly the
// first run that has a candidate: a transaction that created a container
// or TTL node or left one without children may bring it forward; one that
// gave such a node a child, wrote to it (moving its mtime) or deleted it
// may put it off or cancel it. Lock held.
func (s *Server) reapCommitted(tx *txn) {
	r := &s.reap
	fires := tx.fires
	if len(s.tree.special) == 0 {
		// No container or TTL node is left: none of the nodes fired
		// for is one (most servers have none: no lookups).
		fires = nil
	}
	for _, f := range fires {
		n := f.n // the node at f.path, unless a later change removed it
		if n.removed {
			n = s.tree.nodes[f.path]
		}
		if n == nil || !n.reapable() {
			continue
		}
		switch {
		case f.typ == task.EventNodeDataChanged:
			r.stale = true
		case f.typ != task.EventNodeCreated && f.typ != task.EventNodeChildrenChanged:
		case len(n.children) == 0:
			s.considerReap(n)
		default:
			r.stale = true
		}
	}
	if r.stale {
		r.stale = false
		if r.timer != nil && len(r.queue) == 0 {
			s.scheduleReap()
		}
	}
}

// considerReap arms the container manager for n, a container or TTL node
// that a transaction created or left without children, if that brings
// its next run forward. Lock held.
func (s *Server) considerReap(n *node) {
	r := &s.reap
	if s.down || len(r.queue) > 0 {
		return // a run in progress schedules the next when it ends
	}
	due, ok := s.reapDue(n)
	if !ok {
		return
	}
	if at, slot := s.runTime(due); r.timer == nil || at.Before(r.at) {
		s.armReap(at, slot, s.reapRun)
	}
}

// scheduleReap arms the next run for the earliest node due, or leaves the
// manager idle if none is. Lock held.
func (s *Server) scheduleReap() {
	r := &s.reap
	if s.down || s.closed {
		return
	}
	var first time.Time
	found := false
	for n := range s.tree.special {
		if due, ok := s.reapDue(n); ok && (!found || due.Before(first)) {
			first, found = due, true
		}
	}
	if !found {
		if r.timer != nil {
			r.timer.Stop()
			r.timer = nil
		}
		return
	}
	at, slot := s.runTime(first)
	s.armReap(at, slot, s.reapRun)
}

func (s *Server) armReap(at, slot time.Time, f func()) {
	r := &s.reap
	if r.timer != nil {
		r.timer.Stop()
	}
	r.gen++
	gen := r.gen
	r.at, r.slot = at, slot
	r.timer = s.afterFunc(at.Sub(s.clock.Now()), func() {
		if r.gen != gen {
			return // stopped or re-armed since
		}
		r.timer = nil
		f()
	})
}

// reapRun is one run of the container manager. Lock held.
func (s *Server) reapRun() {
	r := &s.reap
	now := s.clock.Now()
	var cands []string
	for n := range s.tree.special {
		if due, ok := s.reapDue(n); ok && !due.After(now) {
			cands = append(cands, n.path)
		}
	}
	slices.Sort(cands)
	s.rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	r.last = r.slot
	r.until = now.Add(time.Duration(len(cands)) * s.reapPause())
	s.tracef("container check candidates=%v", cands)
	r.queue = cands
	s.reapNext()
}

// reapPause is the pause after each deletion: a minute / maxPerMinute, in
// whole milliseconds (ContainerManager.getMinIntervalMs).
func (s *Server) reapPause() time.Duration {
	return time.Duration(60000/s.cfg.ContainerMaxPerMinute) * time.Millisecond
}

// reapNext sends the run's next deletions: one now, the next after the
// pause, the next run once the last pause is over. Lock held.
func (s *Server) reapNext() {
	r := &s.reap
	for len(r.queue) > 0 {
		p := r.queue[0]
		r.queue = r.queue[1:]
		s.deleteContainer(p)
		if len(r.queue) > 0 && s.reapPause() > 0 {
			s.armReap(s.clock.Now().Add(s.reapPause()), r.slot, s.reapNext)
			return
		}
	}
	r.queue = nil
	s.scheduleReap()
}

// deleteContainer applies the container manager's request to delete
// path, in a transaction of its own. Lock held.
func (s *Server) deleteContainer(path string) {
	s.zxid++
	tx := &txn{zxid: s.zxid, now: s.nowMillis()}
	var err error
	n := s.tree.nodes[path]
	switch {
	case n == nil:
		err = task.ErrNoNode
	case len(n.children) > 0:
		err = task.ErrNotEmpty
	case n.isEphemeral():
		err = task.ErrBadVersion
	default:
		s.removeNode(tx, n)
	}
	s.tracef("container delete %s zxid=%d: %s", path, s.zxid, errString(err))
	if err == nil {
		s.commit(tx)
	} else {
		s.journal(tx.zxid, 0)
	}
}

// checkReaper is CheckInvariants' part: between runs, the timer is armed
// for the first run at which a node is a candidate, and only then. Lock
// held.
func (s *Server) checkReaper() error {
	r := &s.reap
	if s.down || s.closed || len(r.queue) > 0 {
		return nil
	}
	var first time.Time
	var firstPath string
	for n := range s.tree.special {
		if due, ok := s.reapDue(n); ok && (firstPath == "" || due.Before(first)) {
			first, firstPath = due, n.path
		}
	}
	switch {
	case firstPath == "" && r.timer != nil:
		return fmt.Errorf("container manager armed for %s with nothing due", r.at)
	case firstPath == "":
		return nil
	case r.timer == nil:
		return fmt.Errorf("%s: due for deletion, but the container manager is idle", firstPath)
	}
	if at, _ := s.runTime(first); !at.Equal(r.at) {
		return fmt.Errorf("%s: due %s, first run %s, but the container manager is armed for %s", firstPath, first, at, r.at)
	}
	return nil
}

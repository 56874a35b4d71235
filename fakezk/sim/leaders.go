package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/zkflow/zkflow/fakezk"
)

// Leaders checks that at most one client acts as leader at any simulated
// instant. A client calls Begin when it starts acting (before its first
// act as leader) and End when it stops (before or when it learns it may
// have lost the role). Intervals are on the world's clock; two intervals
// that touch (one ends at the instant the other begins) do not overlap.
// Each term is a "leader" bar on its client's lane of the seed's picture
// (timeline), the term that overlaps another included.
//
// # Pauses
//
// A leader can keep "never two acting leaders" only while it runs in
// time: it must hear of its disconnect, and give up, before the server
// could expire its session. A clock jump (the ClockJump fault) moves
// time on for the server, whose timers expire sessions, while no client
// runs: every client is paused for the length of the jump, and a leader
// paused past its margin acts on after another was granted the role. No
// election can prevent that; what must hold then is fencing (judge the
// writes with Fencing). So Begin does not judge an overlap with a client
// that has acted across clock jumps adding up to more than Margin; it
// counts it in Excused instead.
//
// A process that stops without knowing it stops acting is not judged
// either: one that crashed (World.Crash) acts no more, and one that froze
// (World.Pause) while acting counts as acting no longer from the pause
// on. A frozen process cannot learn it lost the role while frozen, and
// no election can keep it from acting on its old belief for an instant
// after it resumes; what it does then is judged by fencing (its fenced
// writes must be refused: Fencing), not by this checker. A Begin after
// the pause is judged again, unless the process makes it before it has
// heard that its session ended while it was frozen (its executor's
// session is no longer live at the server): that too is the old belief
// running on, and is judged by fencing.
//
// Nor is a leader whose node an operator deleted (the Operator fault),
// when it began with BeginNode, whether the delete came while it acted or
// just before it began (on a read answered before the delete and
// delivered late): it cannot know before the deletion is delivered to it,
// which a delay can hold back for as long as the next leader needs to be
// granted the role; its fenced writes are refused, and that is what is
// judged.
type Leaders struct {
	w      *World
	acting map[int]term
	terms  int
	// Margin is how long a leader may be paused (the clock jumps while it
	// acts) and still be judged: set it to the recipe's margin between
	// giving up and the server's expiry, less the longest delivery delay
	// of the scenario. Zero excuses an overlap after any jump.
	Margin time.Duration
	// Excused counts the overlaps not judged because of a pause.
	Excused int
	// Siblings maps the key of a second campaign on a client's session
	// (two goroutines on one Client, say) to that client: Begin and End
	// take the key, and the campaign is judged as a client of its own
	// (two sibling campaigns acting at once fail) whose process is the
	// client's (its crash or pause ends the term). Keys must not be
	// client indices; nil: every key is a client.
	Siblings map[int]int
}

// proc is the client whose process runs the campaign of key.
func (l *Leaders) proc(key int) int {
	if c, ok := l.Siblings[key]; ok {
		return c
	}
	return key
}

// name names the campaign of key in a message.
func (l *Leaders) name(key int) string {
	if c, ok := l.Siblings[key]; ok {
		return fmt.Sprintf("client %d's campaign %d", c, key)
	}
	return fmt.Sprintf("client %d", key)
}

// term is one client's acting interval: since when, and which process
// (incarnation and pause count) began it.
type term struct {
	since       time.Time
	path        string // the node its role rests on, if known
	czxid       int64  // and that node's czxid
	incarnation int
	pauses      int
	span        SpanID // its bar on the timeline (timeline.go)
}

// NewLeaders returns a checker reading times from w's clock.
func NewLeaders(w *World) *Leaders { return &Leaders{w: w, acting: map[int]term{}} }

// stale reports whether client's term ended without the client's knowing:
// its process crashed or froze since it began.
func (l *Leaders) stale(client int, t term) bool {
	client = l.proc(client)
	if client >= len(l.w.procs) {
		return false
	}
	p := l.w.procs[client]
	return p.incarnation != t.incarnation || p.pauses != t.pauses
}

// Begin records that client starts acting as leader; it fails if another
// client is acting, unless that client was paused past Margin.
func (l *Leaders) Begin(client int) error { return l.BeginNode(client, "", 0) }

// BeginNode is Begin for a role that rests on the node at path created
// at zxid czxid (a candidate node, a master node): an overlap with a
// client whose node the operator deleted is not judged (it counts in
// Excused).
func (l *Leaders) BeginNode(client int, path string, czxid int64) error {
	now := l.w.Clock.Now()
	l.terms++
	if l.resumedOnOldBelief(client) {
		return nil
	}
	if path != "" && l.w.Operated(path, czxid, now) {
		// Deposed by the operator before it heard: a read answered before
		// the delete, delivered late. Judged by fencing.
		l.Excused++
		return nil
	}
	for _, other := range sortedKeys(l.acting) {
		t := l.acting[other]
		if l.stale(other, t) {
			l.w.closeSpan(t.span, "its process paused or crashed")
			delete(l.acting, other)
			continue
		}
		if other == client {
			continue
		}
		since := t.since
		if paused := l.w.Jumped(since, now); paused > l.Margin {
			l.Excused++
			continue
		}
		if t.path != "" && l.w.Operated(t.path, t.czxid, now) {
			l.Excused++
			continue
		}
		if l.w.Recording() {
			l.w.OpenSpan(l.proc(client), "leader", leaderLabel(czxid)) // the second leader, on the seed's picture
		}
		return fmt.Errorf("%s acts as leader at %s while %s has acted since %s",
			l.name(client), now.Sub(epoch()), l.name(other), since.Sub(epoch()))
	}
	if _, ok := l.acting[client]; !ok {
		t := term{since: now, path: path, czxid: czxid}
		if p := l.proc(client); p < len(l.w.procs) {
			t.incarnation, t.pauses = l.w.procs[p].incarnation, l.w.procs[p].pauses
		}
		if l.w.Recording() {
			t.span = l.w.OpenSpan(l.proc(client), "leader", leaderLabel(czxid))
		}
		l.acting[client] = t
	}
	return nil
}

// Resume records that client, acting already (its term begun and not
// ended), acts as leader again after it was uncertain (a disconnect and a
// reconnect to its session). It fails if another client began acting
// since client's term began and acts still: client took the role back on
// what it read before the other was granted it. Unlike Begin, it excuses
// no operator's delete of client's node (client's read after its
// reconnect must see it), only a process paused past Margin or acting on
// a session the server has ended.
func (l *Leaders) Resume(client int) error {
	now := l.w.Clock.Now()
	mine, ok := l.acting[client]
	if !ok || l.stale(client, mine) || l.resumedOnOldBelief(client) {
		return nil
	}
	for _, other := range sortedKeys(l.acting) {
		t := l.acting[other]
		if other == client || l.stale(other, t) || !t.since.After(mine.since) {
			continue
		}
		if paused := l.w.Jumped(mine.since, now); paused > l.Margin {
			l.Excused++
			continue
		}
		return fmt.Errorf("%s leads again at %s while %s, granted the role at %s after %s began, still acts",
			l.name(client), now.Sub(epoch()), l.name(other), t.since.Sub(epoch()), l.name(client))
	}
	return nil
}

// resumedOnOldBelief reports whether client's process paused and acts on
// a session the server has ended since (it has not heard yet).
func (l *Leaders) resumedOnOldBelief(client int) bool {
	client = l.proc(client)
	if client >= len(l.w.procs) || l.w.procs[client].pauses == 0 {
		return false
	}
	sess, _ := l.w.Execs[client].Current()
	return !slices.Contains(l.w.Server.Sessions(), sess.ID)
}

// End records that client stopped acting as leader.
func (l *Leaders) End(client int) {
	if t, ok := l.acting[client]; ok {
		l.w.CloseSpan(t.span)
		delete(l.acting, client)
	}
}

// Acting returns the clients acting now, sorted: those whose term a
// crash or a pause has not ended.
func (l *Leaders) Acting() []int {
	var out []int
	for _, c := range sortedKeys(l.acting) {
		if !l.stale(c, l.acting[c]) {
			out = append(out, c)
		}
	}
	return out
}

// Terms is the number of Begin calls.
func (l *Leaders) Terms() int { return l.terms }

func epoch() time.Time { return fakezk.Epoch }

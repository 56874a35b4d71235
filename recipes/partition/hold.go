package partition

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// State is where a member is in its cycle, kazoo's states in Go.
type State int

const (
	// Allocating: the party changed (or the member has just joined, or
	// its session changed) and the member waits for it to be stable, or
	// it is taking items of its assignment that it does not hold yet.
	// Items still held are held: each hold ends only by a Release.
	Allocating State = iota
	// Acquired: the party has been unchanged for Stable and the member
	// holds every item of its assignment, and nothing else, none of them
	// draining (WithDrain: an item that drains is given up once its drain
	// ends, even if the division gave it back meanwhile).
	Acquired
	// Ended: the member ended (Leave, the executor closed, an error no
	// retry settles); Err says why. It holds nothing.
	Ended
)

func (s State) String() string {
	switch s {
	case Allocating:
		return "allocating"
	case Acquired:
		return "acquired"
	case Ended:
		return "ended"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Change is one report to a member's callback: its state and the items
// it holds now, and the items taken and given up since the previous
// report (a release, kazoo's RELEASE step, is the member's own: it gives
// up items the assignment moved elsewhere, once the party is stable). An
// item given up and taken again since the previous report, held now
// under another Hold, is in both Acquired and Released.
type Change struct {
	State    State
	Held     []Hold   // sorted by item
	Acquired []string // sorted
	Released []string // sorted; given up, or lost (lock node deleted, session ended)
}

// Hold is one item held: the item's lock node, created by this member's
// session, was the lowest contender of the item's directory. Token, the
// node's creation zxid, is a fencing token: the tokens of the successive
// holders of one item strictly increase.
type Hold struct {
	Item    string
	Token   int64
	Path    string // the lock node
	Version int32  // the lock node's version when it was acquired
	Session task.Session
	life    *holdLife // nil for a Hold not made by a member
}

// holdLife says whether a hold has ended on its member's side: given up
// (reported released) or the member ended. Shared by the copies of one
// Hold the member hands out; the Hold a drain task is given has its own,
// which ends with the drain.
type holdLife struct {
	ended atomic.Bool
	m     *Member // the member that holds it (Client.FencedHold checks it)
	// The item and lock node of the Hold it was made for: it is the
	// fence of that Hold's writes (Hold.Fenced), with nothing made for
	// them.
	item, path string
}

// Refused is Hold.Fenced's answer before a write: ErrLost once the hold
// has ended on its member's side (zkops.Fence).
func (l *holdLife) Refused() error { return refused(l, l.item, l.path) }

// Lost is Hold.Fenced's error for a write whose check failed
// (zkops.Fence): the hold has ended. A node gone or written, the
// member's watch ends it (follow); one an operator closed to the
// member's reads (an ACL: the check fails with task.ErrNoAuth), which
// the watch cannot see, the member ends here if it still holds it
// (lostByFence). Executor goroutine.
func (l *holdLife) Lost(cause, _ error) error {
	if l.m != nil && errors.Is(cause, task.ErrNoAuth) && !canary.On(bugLostKeepsHold) {
		l.m.lostByFence(l)
	}
	return lost(l.item, l.path, cause)
}

// bugLostKeepsHold: a fenced write whose check the server refused fails
// with ErrLost, the hold left as it was: with the lock node closed to
// the member's reads (an ACL: neither deleted nor written, so the
// member's watch sees nothing), the member goes on holding the item and
// every write fails (TestFencedWriteLostEndsTheHold).
const bugLostKeepsHold canary.Name = "partition/lost-keeps-hold"

// renamedFence is the fence of a Hold whose Item or Path its user
// changed: its errors name them, as they always have.
type renamedFence struct {
	life       *holdLife
	item, path string
}

func (f *renamedFence) Refused() error            { return refused(f.life, f.item, f.path) }
func (f *renamedFence) Lost(cause, _ error) error { return lost(f.item, f.path, cause) }

func refused(l *holdLife, item, path string) error {
	if l.ended.Load() && !canary.On(bugFencedAfterGiveUp) {
		return fmt.Errorf("partition: %w: item %q (%s): %w", ErrLost, item, path, errGivenUp)
	}
	return nil
}

func lost(item, path string, cause error) error {
	return fmt.Errorf("partition: %w: item %q (%s): %w", ErrLost, item, path, cause)
}

// bugFencedAfterGiveUp: Hold.Fenced sends a write for a hold its member
// has given up or ended with, whose node is still there until its delete
// is applied: the write is applied after the hold ended.
const bugFencedAfterGiveUp canary.Name = "partition/fenced-after-give-up"

// errGivenUp is the cause of Fenced's ErrLost for a hold its member has
// given up, its node maybe not deleted yet.
var errGivenUp = errors.New("given up by its member")

// Fenced returns a task that applies ops in one multi behind a check that
// h's lock node still exists unchanged: ZooKeeper refuses it (an error
// wrapping ErrLost) once the hold has ended, however late it arrives.
// Once the member has given the hold up (a Change reported it released)
// or ended (Leave, an error), Fenced fails with ErrLost without sending
// anything, though the node may still be there until its delete, sent
// after, is applied; the Hold a WithDrain task is given stays good until
// that task ends. A check an ACL refuses (an operator closed the node to
// the member's reads: task.ErrNoAuth, which the error wraps too), which
// the member's watch cannot see, ends the hold on the member's side as
// the watch does for a node deleted or written: the member reports the
// item released, deletes the node and takes the item again if it is
// still its share.
// Connection loss, and task.ErrSessionExpired for a write sent on a
// session that ended, are returned as they are: the outcome is unknown
// (a write applied was applied while the hold stood). The check
// names the node by its path and version, as ZooKeeper's check does: an
// operator who deletes a lock node and creates one again at the same
// path (version 0 again) lets an ended hold's late write through, so
// never re-create a lock node by hand.
func (h Hold) Fenced(ops ...task.MultiOp) task.Task[[]task.MultiResult] {
	if h.Path == "" {
		return task.Fail[[]task.MultiResult](fmt.Errorf("partition: item %q: %w", h.Item, ErrNotHeld))
	}
	if h.life == nil {
		return zkops.Fenced(h.Path, h.Version, ops, func(cause, _ error) error { return lost(h.Item, h.Path, cause) })
	}
	var fence zkops.Fence = h.life
	if h.life.item != h.Item || h.life.path != h.Path {
		fence = &renamedFence{h.life, h.Item, h.Path}
	}
	return zkops.FencedBy(h.Path, h.Version, ops, fence)
}

// end ends h on its member's side (Hold.Fenced refuses it from now).
func (h Hold) end() {
	if h.life != nil {
		h.life.ended.Store(true)
	}
}

// forDrain returns the Hold a drain task is given: h, with a life of its
// own that ends when the drain does.
func (h Hold) forDrain() Hold {
	var m *Member
	if h.life != nil {
		m = h.life.m
	}
	h.life = &holdLife{m: m, item: h.Item, path: h.Path}
	return h
}

// of reports whether h is one of m's holds (handed out by m: Wait,
// Member.Held, Member.Hold, a drain's), its item and lock node as m
// handed it out: a copy whose Item or Path was changed is fenced by
// another node, maybe another member's hold.
func (h Hold) of(m *Member) bool {
	return h.life != nil && h.life.m == m && h.life.item == h.Item && h.life.path == h.Path
}

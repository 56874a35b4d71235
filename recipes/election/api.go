package election

import (
	"errors"
	"fmt"
	"math"

	"github.com/zkflow/zkflow/recipes"
	"github.com/zkflow/zkflow/task"
)

// Errors of the recipe, tested with errors.Is.
var (
	// ErrLost: leadership (or, while campaigning, the candidate node) is no
	// longer ours. It wraps the cause: task.ErrSessionExpired or
	// task.ErrClosed (the session ended), ErrGaveUp (disconnected for too
	// long), or the node deleted or changed by someone else. A fenced write
	// that ZooKeeper rejected wraps it too, with the server's error.
	// It is recipes.ErrLost, the same value in every recipe.
	ErrLost = recipes.ErrLost
	// ErrGaveUp is the cause of a loss by the disconnect rule: the session
	// stayed suspended for the GiveUp fraction (WithGiveUp) of its negotiated timeout, so the
	// leader stepped down before the server could expire the session and
	// elect someone else.
	ErrGaveUp = errors.New("election: gave up while disconnected")
	// ErrResigned is Leadership.Err after Resign.
	ErrResigned = errors.New("election: resigned")
	// ErrNoLeader is the error of Leader when nobody leads.
	ErrNoLeader = errors.New("election: no leader")
)

// errZero is the error of the tasks of a nil or zero Election or Master
// (not made by New or NewMaster: its directory "", which New refuses).
func errZero(what string) error {
	return fmt.Errorf("election: nil or zero %s (not made by its constructor): %w", what, task.ErrInvalidPath)
}

// DefaultGiveUp is the default GiveUp fraction (WithGiveUp): a quarter of the session
// timeout. zkadapter notices a silent network partition up to 2/3 of the
// timeout after the server last heard from it (the sending of the last
// ping it answered); 2/3 + 1/4 leaves 1/12 of the timeout before the
// server may expire the session.
// See the package documentation.
const DefaultGiveUp = 1.0 / 4

// config is what the options set. The zero value is ready to use.
type config struct {
	data    []byte
	giveUp  float64
	onState func(l *Leadership, s State)
	acl     task.ACLProvider
}

// Option configures an Election or a Master (New, NewMaster, NewClient,
// NewMasterClient).
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithData writes d into the candidate node (the master node for a
// Master): the candidate's identity, say, for Leader to report. At most
// task.MaxDataSize bytes, or the constructor fails with
// task.ErrDataTooLarge.
func WithData(d []byte) Option { return optionFunc(func(c *config) { c.data = d }) }

// WithGiveUp sets the fraction of the negotiated session timeout that a
// leader whose session is suspended waits, on the executor's clock,
// before it gives up leadership (ErrGaveUp). In (0, 1), or the
// constructor fails with task.ErrInvalidArgument; 0 means DefaultGiveUp.
// See the package documentation for how to choose it.
func WithGiveUp(f float64) Option { return optionFunc(func(c *config) { c.giveUp = f }) }

// WithOnState makes fn be called on the executor goroutine at every change
// of a Leadership's state (Leading, Uncertain, Ended), in order, once per
// change. fn must not block.
func WithOnState(fn func(l *Leadership, s State)) Option {
	return optionFunc(func(c *config) { c.onState = fn })
}

// WithACL gives, by path, the ACL of every node the election creates: the
// candidate nodes (the path sent: DIR/_c_<id>-latch-), a Master's node
// and lease, and the directories and ancestors it creates. Without it, or
// with p nil, they get task.OpenACL. Creates passed to Leadership.Fenced
// keep their own ACL. A Master's candidates write the lease directory's
// data (a Master's campaign moves its version), so its ACL must let them
// write as well as create and delete children. Every candidate must be
// able to READ the others' nodes (and a Master's node): a waiter watches
// the node ahead of it, and ZooKeeper does not tell a session of a change
// to a node it may not read, so a candidate behind a node it cannot read
// (an ACL for its creator alone, such as scheme "auth") fails its
// campaign with task.ErrNoAuth rather than wait for ever.
func WithACL(p task.ACLProvider) Option { return optionFunc(func(c *config) { c.acl = p }) }

// newConfig applies opts and reports a bad option, wrapping
// task.ErrInvalidArgument (or task.ErrDataTooLarge).
func newConfig(opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			return config{}, fmt.Errorf("election: nil option: %w", task.ErrInvalidArgument)
		}
		o.apply(&c)
	}
	if math.IsNaN(c.giveUp) || c.giveUp < 0 || c.giveUp >= 1 {
		return config{}, fmt.Errorf("election: GiveUp %v outside [0, 1): %w", c.giveUp, task.ErrInvalidArgument)
	}
	if len(c.data) > task.MaxDataSize {
		return config{}, fmt.Errorf("election: Data of %d bytes: %w", len(c.data), task.ErrDataTooLarge)
	}
	return c, nil
}

func (c *config) giveUpFraction() float64 {
	if c.giveUp == 0 {
		return DefaultGiveUp
	}
	return c.giveUp
}

// State is the state of a Leadership.
type State int

const (
	// Leading: the session is connected and the candidate node is ours.
	Leading State = iota
	// Uncertain: the session is suspended. The leader may finish what it
	// is doing but must be ready to stop when Done closes, which it does
	// at the latest GiveUp of the session timeout after the suspension.
	Uncertain
	// Ended: leadership ended (resigned or lost); Done is closed.
	Ended
)

func (s State) String() string {
	switch s {
	case Leading:
		return "leading"
	case Uncertain:
		return "uncertain"
	case Ended:
		return "ended"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Candidate is what runs for leadership: an *Election or a *Master.
type Candidate interface {
	// Campaign returns a task that waits until this candidate leads and
	// succeeds with its leadership.
	Campaign() task.Task[*Leadership]
	// Leader returns a task that reads the current leader's data
	// (ErrNoLeader if nobody leads).
	Leader() task.Task[[]byte]
	// Observe returns a task that follows who leads and calls fn with
	// each change (Election.Observe).
	Observe(fn func(Observation)) task.Task[*Observer]
}

var (
	_ Candidate = (*Election)(nil)
	_ Candidate = (*Master)(nil)
)

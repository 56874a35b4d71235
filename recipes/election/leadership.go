package election

import (
	"errors"
	"fmt"
	"sync"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Leadership is won leadership: the candidate node, its session and the
// fencing token. Its accessors (Path, Token, Session, Done, Err, State,
// IsLeader) are safe from any goroutine; its tasks (Fenced, Resign) run on
// the executor.
//
// Leadership ends once: when it is resigned (Err is ErrResigned) or lost
// (Err wraps ErrLost and the cause: task.ErrSessionExpired, task.ErrClosed,
// ErrGaveUp, or the node deleted or changed by someone else). Done is
// closed at that moment, and OnState called with Ended. The tasks of a
// nil or zero Leadership (not won by a campaign) fail with
// task.ErrInvalidArgument.
type Leadership struct {
	path    string
	token   int64
	version int32
	sess    task.Session
	giveUp  float64
	onState func(*Leadership, State)
	ex      *executor.Executor // set by Client.Campaign, for its Resign and Fenced
	// resetDir: a candidate numbered near the end of the directory's
	// counter, which deletes the directory on Resign if it is then empty
	// (zkops.ResetAbove).
	resetDir bool
	// lease is a Master's lease node (see Master); "" for an Election's
	// candidate.
	lease string

	mu    sync.Mutex
	state State
	err   error
	done  chan struct{}

	// executor goroutine only
	rt task.Runtime
	// obs is the executor's Observer (nil if none), told of the end;
	// granted is when leadership was won, on the executor's clock.
	obs     *task.Observer
	granted time.Time
	mon     *task.Scope
	unsub   func()
	timer   task.Timer
	// blinks counts the session's suspensions: a recheck resumes Leading
	// only on a read made since the last (one read before it, its reply
	// held while the connection was down, says nothing of now).
	blinks int
}

// Path is the candidate node's path (for a Master, the master node's).
// A nil or zero Leadership (not won by a campaign) has none: "", a Token
// of 0 and a zero Session; its State is Ended, its Done closed and its
// Err wraps task.ErrInvalidArgument.
func (l *Leadership) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Token is the fencing token: the zxid that created the candidate node
// (czxid). Every later leader's token is larger: its node was created, or
// found to be the lowest, after ours was deleted.
func (l *Leadership) Token() int64 {
	if l == nil {
		return 0
	}
	return l.token
}

// Session is the session the candidate node belongs to.
func (l *Leadership) Session() task.Session {
	if l == nil {
		return task.Session{}
	}
	return l.sess
}

// Done is closed when leadership ends, resigned or lost.
func (l *Leadership) Done() <-chan struct{} {
	if l.zero() {
		return closedDone
	}
	return l.done
}

// closedDone is the Done of a nil or zero Leadership.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Err is nil while leadership has not ended; then ErrResigned, or an error
// wrapping ErrLost and its cause.
func (l *Leadership) Err() error {
	if l.zero() {
		return errZeroLeadership
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// State is the current state: Leading, Uncertain or Ended.
func (l *Leadership) State() State {
	if l.zero() {
		return Ended
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// IsLeader reports whether the state is Leading: not ended and the session
// connected. While the session is suspended it is false (Uncertain), and
// true again on reconnect to the same session within the give-up time.
func (l *Leadership) IsLeader() bool { return l.State() == Leading }

// setState moves to s (not past Ended) and reports the change. Executor
// goroutine.
func (l *Leadership) setState(s State, err error) bool {
	l.mu.Lock()
	if l.state == Ended || l.state == s {
		l.mu.Unlock()
		return false
	}
	l.state = s
	if s == Ended {
		l.err = err
		close(l.done)
	}
	l.mu.Unlock()
	if l.onState != nil {
		l.onState(l, s)
	}
	return true
}

// zero reports a Leadership not won by a campaign (nil, or a zero
// value): its tasks fail with errZeroLeadership.
func (l *Leadership) zero() bool { return l == nil || l.done == nil }

var errZeroLeadership = fmt.Errorf("election: nil or zero Leadership (not won by a campaign): %w", task.ErrInvalidArgument)

// newLeadership returns the leadership of node path, read as st, on
// session sess.
func (c *config) newLeadership(path string, st task.Stat, sess task.Session) *Leadership {
	return &Leadership{
		path:    path,
		token:   st.Czxid,
		version: st.Version,
		sess:    sess,
		giveUp:  c.giveUpFraction(),
		onState: c.onState,
		done:    make(chan struct{}),
	}
}

// observe reports the leadership to the executor's Observer, if one is
// set, and keeps it for the report of the end. Executor goroutine.
func (l *Leadership) observe(s *task.Scope, began time.Time) {
	now := s.Now()
	l.obs = task.ReportRecipe(s, task.RecipeEvent{Kind: "leadership", Event: "elected", Path: l.path, Session: l.sess.ID, At: now, Wait: now.Sub(began)})
	l.granted = now
}

// start follows the session and watches the node. Executor goroutine.
func (l *Leadership) start(s *task.Scope) {
	l.rt = s.Runtime()
	l.unsub = s.Subscribe(l.onSession)
	l.mon = s.Runtime().SessionScope().Child()
	mon := l.mon
	if l.onState != nil {
		l.onState(l, Leading)
	}
	s.Schedule(func() {
		task.RunIn(mon, l.watchNode(), func(_ task.Unit, err error) {
			if !errors.Is(err, task.ErrCanceled) {
				l.lose(err)
			}
		})
	})
}

func (l *Leadership) onSession(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	switch ev.State {
	case task.StateSuspended:
		if l.State() == Ended {
			return
		}
		l.blinks++
		changed := l.setState(Uncertain, nil)
		// Armed at every suspension, also one that comes before the
		// recheck after the last reconnect has set the state back to
		// Leading: the server's countdown restarts at each disconnect.
		if canary.On(bugArmOnChange) && !changed {
			return
		}
		if l.timer == nil && !canary.On(bugNoGiveUp) {
			l.armGiveUp()
		}
	case task.StateConnected:
		if ev.SessionID != l.sess.ID {
			l.lose(task.ErrSessionExpired)
			return
		}
		l.stopGiveUp()
		// The node is re-checked by the watch: a deletion while we were
		// away arrives as its event after this one, so resume only once an
		// exists read after the reconnect has seen the node.
		l.recheck()
	case task.StateExpired:
		l.lose(task.ErrSessionExpired)
	case task.StateClosed:
		l.lose(task.ErrClosed)
	}
}

// armGiveUp starts the give-up timer on the executor's clock: it fires
// from the event queue, so also while the session is suspended.
func (l *Leadership) armGiveUp() {
	l.stopGiveUp()
	d := time.Duration(float64(l.sess.Timeout) * l.giveUp)
	l.timer = l.rt.AfterFunc(l.rt.Clock().Now().Add(d), func() {
		l.timer = nil
		if l.State() == Uncertain {
			l.lose(fmt.Errorf("%w: suspended for %s of a %s session", ErrGaveUp, d, l.sess.Timeout))
		}
	})
}

func (l *Leadership) stopGiveUp() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// recheck reads the node after a reconnect to the same session (and a
// Master's lease after it) and resumes leading if they are still ours.
// It reads after a sync: the session may be back through a member that
// has not applied a delete of the node made while it was away (an
// operator's), where a plain read still shows it, beside a candidate
// granted meanwhile.
func (l *Leadership) recheck() {
	mon := l.mon
	if mon == nil {
		return
	}
	blinks := l.blinks
	read := task.Exists(l.path)
	if !canary.On(bugRecheckUnsynced) {
		read = zkops.AfterSync(l.path, read)
	}
	lost := c.Map(c.Retry(read, retry), func(st *task.Stat) string {
		if st == nil || (!l.isOurs(st) && !canary.On(bugSkipOwnerCheck)) {
			return fmt.Sprintf("node %s deleted", l.path)
		}
		return ""
	})
	if l.lease != "" && !canary.On(bugSkipOwnerCheck) {
		// A Master's lease, read after its node (so after the sync): one
		// deleted by hand ends the leadership here, as it would the next
		// fenced write.
		lost = c.Then(lost, func(why string) task.Task[string] {
			if why != "" {
				return task.Value(why)
			}
			return c.Map(c.Retry(task.Exists(l.lease), retry), func(ls *task.Stat) string {
				if ls == nil || ls.EphemeralOwner != l.sess.ID || ls.Czxid != l.token {
					return fmt.Sprintf("lease %s deleted or replaced", l.lease)
				}
				return ""
			})
		})
	}
	task.Go(mon, lost, func(why string, err error) {
		switch {
		case l.State() == Ended:
		case l.blinks != blinks && !canary.On(bugRecheckAnyRead):
			// Suspended since it was sent: the recheck of the latest
			// reconnect decides.
		case err != nil:
			if !errors.Is(err, task.ErrCanceled) {
				l.lose(err)
			}
		case why != "":
			l.lose(errors.New(why))
		case l.timer == nil:
			// still connected (no suspension since): lead again
			if _, state := mon.Current(); state == task.StateConnected {
				l.setState(Leading, nil)
			}
		}
	})
}

// watchNode ends with an error when the candidate node is deleted or
// changed; other events re-arm the watch.
func (l *Leadership) watchNode() task.Task[task.Unit] {
	return zkops.WatchNode(l.path, l.version, func(st *task.Stat) bool {
		return l.isOurs(st) || canary.On(bugSkipOwnerCheck)
	})
}

// isOurs reports whether st is our node: our session's, and the
// incarnation we hold (a node created again at a Master's fixed path,
// even on our session, is not).
func (l *Leadership) isOurs(st *task.Stat) bool {
	return st.EphemeralOwner == l.sess.ID && st.Czxid == l.token
}

// deleteNode deletes our node, never another incarnation at its path: a
// Master's behind a check of its lease (deleteMaster), a candidate's by
// its czxid (zkops.DeleteNode).
func (l *Leadership) deleteNode() task.Task[task.Unit] {
	st := task.Stat{Czxid: l.token, EphemeralOwner: l.sess.ID, Version: l.version}
	if l.lease != "" {
		// After a loss (not a resign or an expiry) the node may be
		// someone else's now: read it first.
		lost := errors.Is(l.Err(), ErrLost) && !errors.Is(l.Err(), task.ErrSessionExpired)
		return deleteMaster(l.path, l.lease, st, lost)
	}
	return deleteCandidate(l.path, st)
}

// deleteCandidate deletes an Election's candidate node, the incarnation
// st describes: first at the version the grant read, in one request. The
// node's name is unique to the campaign (a prefix drawn for the attempt,
// mixed with the session's id, and the directory's sequence number), so
// no other node has its path, as Fenced assumes: that delete removes our
// node or nothing. After a lost reply, a delete not sent or a bad version
// (someone wrote our node), it never sends it again blindly: it reads the
// node and deletes only our incarnation (zkops.DeleteNode). A node gone,
// or a session that ended, is success. A delete an ACL refuses goes the
// same way, so that it goes on in the background once the task has
// failed with the refusal (zkops.KeepDeleting).
func deleteCandidate(path string, st task.Stat) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, task.Delete(path, st.Version), func(_ task.Unit, err error) {
			switch {
			case err == nil:
				k(task.Unit{}, nil)
			case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent), errors.Is(err, task.ErrBadVersion),
				errors.Is(err, task.ErrNoAuth):
				task.Run(s, zkops.DeleteNode(path, st), k)
			default:
				task.Run(s, zkops.GoneOK(err), k)
			}
		})
	}
}

// end ends leadership with err unless it already ended, and stops
// following it. Executor goroutine.
func (l *Leadership) end(err error) bool {
	first := l.setState(Ended, err)
	if first && l.obs != nil {
		ev := task.RecipeEvent{Kind: "leadership", Event: "lost", Path: l.path, Session: l.sess.ID, At: l.rt.Clock().Now(), Err: err}
		if errors.Is(err, ErrResigned) {
			ev.Event = "resigned"
		}
		ev.Held = ev.At.Sub(l.granted)
		l.obs.OnRecipe(ev)
	}
	l.stopGiveUp()
	if l.unsub != nil {
		l.unsub()
		l.unsub = nil
	}
	if l.mon != nil {
		mon := l.mon
		l.mon = nil
		mon.Cancel(task.ErrCanceled)
	}
	return first
}

func (l *Leadership) lose(cause error) {
	if cause == nil {
		cause = errors.New("unknown cause")
	}
	if !l.end(fmt.Errorf("election: %w: %s: %w", ErrLost, l.path, cause)) {
		return
	}
	// Lost while the session may live on (given up, a fenced write
	// refused, the node changed): our node must go, or the others wait for
	// it until the session ends (and a Master campaigning again on this
	// session would wait behind its own node). The delete runs as a flow
	// of its own on the session it belongs to; it is a no-op if the
	// session ended (its ephemerals went with it), and it deletes only our
	// incarnation (deleteNode): never a node created at the path since.
	if l.rt != nil && !errors.Is(cause, task.ErrSessionExpired) && !errors.Is(cause, task.ErrClosed) {
		rt := l.rt
		task.Go(rt.SessionScope(), l.deleteNode(), func(_ task.Unit, err error) {
			if err != nil && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrClosed) {
				rt.Report(fmt.Errorf("election: delete %s after losing leadership: %w", l.path, err))
			}
		})
	}
}

// Fenced returns a task that applies ops in one multi together with a
// check that only this leadership's incarnation passes. For an Election,
// the check is on the candidate node at the version it was created with:
// its name is unique to the campaign (a prefix drawn for the attempt and
// a sequence number), so no later node has its path. For a Master, whose
// node's path is fixed and whose every incarnation starts at version 0,
// the check is on the master's lease: a node named by the campaign's
// random id, created in the multi that made it master, and deleted by the
// multi of any later master.
// So ZooKeeper itself rejects the writes of a leader that has lost
// leadership (its session expired and the node went, someone deleted it,
// or another leader took over), however late they arrive: then Fenced fails with an error
// wrapping ErrLost and the server's error (task.ErrNoNode,
// task.ErrBadVersion), and leadership is marked lost. Once leadership is
// known to have ended (Err is not nil), Fenced refuses at once without
// sending anything, with an error wrapping Err: after giving up, the node
// may live until the reconnect deletes it. On success the results are
// those of ops (without the check's). Another failing op gives the usual
// *task.OpError wrapping a *task.MultiError whose Index counts within ops.
// Connection loss leaves the outcome unknown, as for any multi: it is not
// retried here. A create among ops with a nil ACL gets task.OpenACL.
func (l *Leadership) Fenced(ops ...task.MultiOp) task.Task[[]task.MultiResult] {
	if l.zero() {
		return task.Fail[[]task.MultiResult](errZeroLeadership)
	}
	path, version := l.path, l.version
	if l.lease != "" {
		path, version = l.lease, 0
	}
	fenced := zkops.Fenced(path, version, ops, func(cause, err error) error {
		l.lose(cause)
		return fmt.Errorf("election: fenced write: %w: %w", ErrLost, err)
	})
	return func(s *task.Scope, k task.Cont[[]task.MultiResult]) {
		if err := l.Err(); err != nil {
			// Known lost (or given up, the node perhaps not yet deleted):
			// refuse without sending.
			task.Resume(s, k, nil, fmt.Errorf("election: fenced write: %w", err))
			return
		}
		task.Run(s, fenced, k)
	}
}

// Resign returns a task that gives leadership up: when it starts, Done is
// closed and Err becomes ErrResigned, then the candidate node is deleted,
// retrying past connection loss. It is idempotent: a node already gone, or
// a session that ended (the node went with it), is success. If the
// caller's scope ends first (deadline, cancel), the delete goes on as a
// flow of its own. A candidate's delete an ACL refuses (an operator
// closed the directory) fails with task.ErrNoAuth and is sent again in
// the background every twice the session timeout until the ACL lets it
// or the session ends. Like any task, it does not start in a scope that has
// already ended (task.Run): to give it back whatever the outcome of the
// work in between, register it with Scope.Defer once taken (a cleanup
// runs as a flow of its own when the scope closes, ended or not).
func (l *Leadership) Resign() task.Task[task.Unit] {
	if l.zero() {
		return task.Fail[task.Unit](errZeroLeadership)
	}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		l.end(ErrResigned)
		del := l.deleteNode()
		if l.resetDir {
			// Near the end of the counter: restart it while the
			// directory is empty (see zkops.ResetAbove).
			del = c.Seq(del, zkops.ResetIfEmpty(task.Parent(l.path)))
		}
		zkops.Detached(del)(s, k)
	}
}

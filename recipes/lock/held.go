package lock

import (
	"errors"
	"fmt"
	"sync"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Held is a lock that was acquired: its node, its session and its fencing
// token. Its accessors (Path, Token, Seq, Session, Done, Err, IsHeld) are
// safe from any goroutine; its tasks (Fenced, Release) run on the executor.
//
// The lock ends once: when it is released (Err is ErrUnlocked) or lost
// (Err wraps ErrLockLost and the cause: task.ErrSessionExpired,
// task.ErrClosed, or the node deleted or changed by someone else). Done is
// closed at that moment.
type Held struct {
	dir     string
	path    string
	seq     int64
	token   int64
	version int32
	sess    task.Session
	ex      *executor.Executor // set by Client.Acquire, for its Release and Fenced
	cl      *Client            // the Client that took it, if any (its Release checks it)
	// pending, for a lock taken through a Client, counts the delete of
	// the node after a loss (lose), from before Done closes.
	pending *blocking.Pending

	mu        sync.Mutex
	uncertain bool
	err       error
	done      chan struct{}

	rt    task.Runtime // the runtime it was acquired on
	watch sync.Once    // the node watch is set at the first Done, Err or IsHeld

	// executor goroutine only
	ended bool        // the lock has ended (end ran)
	mon   *task.Scope // the node watch's scope, once it is set
	// The holders of the runtime (holders): the session scope the lock
	// was taken under, and the links of the list of live holders.
	sessScope  *task.Scope
	prev, next *Held
	// markPending: the mark was sent and has not settled (its reply, or
	// its retries', not in yet): see mark. markWaiters run when it does.
	markPending bool
	markWaiters []func()
	// obs is the executor's Observer (nil if none), told of the end;
	// granted is when the lock was acquired, on clock.
	obs     *task.Observer
	clock   task.Clock
	granted time.Time
}

// Path is the lock node's path.
func (h *Held) Path() string { return h.path }

// Seq is the sequence number the server gave the lock node. It is not a
// fencing token: it starts again from zero when the directory is
// recreated (see the package documentation on wrap-around).
func (h *Held) Seq() int64 { return h.seq }

// Token is the fencing token: the zxid that created the lock node
// (czxid). See the package documentation for why it only grows.
func (h *Held) Token() int64 { return h.token }

// Session is the session the lock node belongs to.
func (h *Held) Session() task.Session { return h.sess }

// Done is closed when the lock ends, released or lost. The first call to
// Done, Err or IsHeld sets the watch on the lock node that notices someone
// else deleting or changing it (see "Losing the lock" in the package
// documentation).
func (h *Held) Done() <-chan struct{} {
	h.watchNodeOnce()
	return h.done
}

// Err is nil while the lock has not ended; then ErrUnlocked after a
// release, or an error wrapping ErrLockLost and its cause.
func (h *Held) Err() error {
	h.watchNodeOnce()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// IsHeld reports whether the lock is held for certain: it has not ended
// and the session is connected. While the session is suspended it is
// false (the lock is uncertain: the session may expire on the server
// without us hearing of it), and true again on reconnect to the same
// session. Act on it only as a hint; writes that must not happen after a
// loss go through Fenced.
func (h *Held) IsHeld() bool {
	h.watchNodeOnce()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err == nil && !h.uncertain
}

// observe reports the acquisition to the executor's Observer, if one is
// set, and keeps it for the report of the end (released or lost).
// Executor goroutine.
func (h *Held) observe(s *task.Scope, began time.Time) {
	now := s.Now()
	h.obs = task.ReportRecipe(s, task.RecipeEvent{Kind: "lock", Event: "acquired", Path: h.path, Session: h.sess.ID, At: now, Wait: now.Sub(began)})
	if h.obs != nil {
		h.clock, h.granted = s.Clock(), now
	}
}

// start follows the session (holders). The node is watched from the
// first Done, Err or IsHeld (a holder that never asks is not told of a
// deletion; its fenced writes still fail), or at once when there is no
// executor to post the watch to. Executor goroutine.
func (h *Held) start(s *task.Scope) {
	h.rt = s.Runtime()
	follow(h)
	if _, ok := h.rt.(*executor.Executor); !ok {
		h.watch.Do(func() { s.Schedule(h.watchNode) })
	}
}

// watchNodeOnce has the node watched, once. Any goroutine.
func (h *Held) watchNodeOnce() {
	h.watch.Do(func() {
		if ex, ok := h.rt.(*executor.Executor); ok {
			executor.Submit(ex, task.Func(func(*task.Scope) (task.Unit, error) { h.watchNode(); return task.Unit{}, nil }), nil)
		}
	})
}

// watchNode watches the lock node until the lock ends, in a scope under
// the session scope the lock was taken under (so the session's end ends
// it). Executor goroutine.
func (h *Held) watchNode() {
	if h.ended {
		return
	}
	h.mon = h.sessScope.Child()
	// The version is read once the mark has settled: a mark refused by
	// the node's ACL leaves the node at the create's version.
	watch := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		zkops.WatchNode(h.path, h.version, nil)(s, k)
	})
	task.RunIn(h.mon, afterMark(h, watch), func(_ task.Unit, err error) {
		if canary.On(bugStaleSession) && errors.Is(err, task.ErrSessionExpired) {
			return
		}
		// (A watch another user of the session took away is a wake-up
		// in WatchNode: its next round reads the node again.)
		if !errors.Is(err, task.ErrCanceled) {
			h.lose(err)
		}
	})
}

// isOver reports whether the lock has ended, without setting the node
// watch as Done, Err and IsHeld do. Any goroutine.
func (h *Held) isOver() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err != nil
}

// holders are the live holders of one runtime, told of its session
// events by one subscription and of the end of their session scope by
// one callback per session, rather than each subscribing on its own: a
// lock taken and released in a loop then costs the session nothing per
// hold. A holder is in the list from start to end. The list is kept on
// the runtime (task.RuntimeValue) and used on its executor goroutine
// only.
type holders struct {
	rt    task.Runtime
	slot  *holdersSlot
	head  *Held
	scope *task.Scope // the last session scope whose end it listens for
	unsub func()
}

// holdersSlot holds a runtime's holders (task.RuntimeValue), nil once
// the executor has stopped until a lock is taken on it again.
type holdersSlot struct{ d *holders }

var holdersKey byte // the key of a runtime's holdersSlot

func holdersOf(rt task.Runtime) *holdersSlot {
	return task.RuntimeValue(rt, &holdersKey, func() *holdersSlot { return new(holdersSlot) })
}

// follow adds h to its runtime's holders. Executor goroutine.
func follow(h *Held) {
	rt := h.rt
	slot := holdersOf(rt)
	d := slot.d
	if d == nil {
		d = &holders{rt: rt, slot: slot}
		slot.d = d
	}
	if d.unsub == nil {
		d.unsub = rt.Subscribe(d.onEvent)
	}
	h.sessScope = rt.SessionScope()
	h.prev, h.next = nil, d.head
	if d.head != nil {
		d.head.prev = h
	}
	d.head = h
	if ss := h.sessScope; d.scope != ss {
		// The session scope ends with the session (expiry) or the
		// executor (Close, Shutdown), after the subscribers have heard
		// of it: the locks taken under it end with it, watched or not,
		// whichever comes first. (If it has ended already, this runs at
		// once.)
		d.scope = ss
		ss.OnDone(func(err error) { d.sessionEnded(ss, err) })
	}
}

// unfollow takes h off its runtime's holders. Executor goroutine.
func unfollow(h *Held) {
	d := holdersOf(h.rt).d
	if d == nil || (d.head != h && h.prev == nil) {
		return // not in the list
	}
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		d.head = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	}
	h.prev, h.next = nil, nil
}

// live returns the holders now in the list (a copy: a holder leaves it
// when told of its end).
func (d *holders) live(under *task.Scope) []*Held {
	var hs []*Held
	for h := d.head; h != nil; h = h.next {
		if under == nil || h.sessScope == under {
			hs = append(hs, h)
		}
	}
	return hs
}

func (d *holders) onEvent(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	for _, h := range d.live(nil) {
		h.onSession(ev)
	}
	if ev.State == task.StateClosed {
		// The executor has stopped: no event comes any more.
		if d.slot.d == d {
			d.slot.d = nil
		}
		d.unsub()
	}
}

// sessionEnded ends the locks taken under the session scope ss, which
// ended with err.
func (d *holders) sessionEnded(ss *task.Scope, err error) {
	if d.scope == ss {
		d.scope = nil
	}
	if errors.Is(err, task.ErrCanceled) || (canary.On(bugStaleSession) && errors.Is(err, task.ErrSessionExpired)) {
		return
	}
	for _, h := range d.live(ss) {
		h.lose(err)
	}
}

func (h *Held) onSession(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	switch ev.State {
	case task.StateSuspended:
		h.mu.Lock()
		h.uncertain = true
		h.mu.Unlock()
	case task.StateConnected:
		if ev.SessionID != h.sess.ID && canary.On(bugStaleSession) {
			h.mu.Lock()
			h.uncertain = false
			h.mu.Unlock()
			return
		}
		if ev.SessionID != h.sess.ID {
			h.lose(task.ErrSessionExpired)
			return
		}
		h.mu.Lock()
		h.uncertain = false
		h.mu.Unlock()
	case task.StateExpired:
		if canary.On(bugStaleSession) {
			return
		}
		h.lose(task.ErrSessionExpired)
	case task.StateClosed:
		h.lose(task.ErrClosed)
	}
}

// end ends the lock with err unless it already ended, and stops following
// it. Executor goroutine.
func (h *Held) end(err error) {
	h.mu.Lock()
	first := h.err == nil
	if first {
		h.err = err
		close(h.done)
	}
	h.mu.Unlock()
	if first && h.obs != nil {
		ev := task.RecipeEvent{Kind: "lock", Event: "released", Path: h.path, Session: h.sess.ID, At: h.clock.Now()}
		ev.Held = ev.At.Sub(h.granted)
		if !errors.Is(err, ErrUnlocked) {
			ev.Event, ev.Err = "lost", err
		}
		h.obs.OnRecipe(ev)
	}
	if !h.ended {
		h.ended = true
		unfollow(h)
	}
	if h.mon != nil {
		// Cancel ends the node watch; Close detaches mon from the session
		// scope, which outlives the lock: a canceled scope that is never
		// closed stays linked there for the session's life.
		mon := h.mon
		h.mon = nil
		mon.Cancel(task.ErrCanceled)
		mon.Close()
	}
}

func (h *Held) lose(cause error) {
	if cause == nil {
		cause = errors.New("unknown cause")
	}
	del := !h.ended && !errors.Is(cause, task.ErrSessionExpired) && !errors.Is(cause, task.ErrClosed) && h.sessScope != nil
	done := func() {}
	if del {
		// Counted before Done closes: a Client that sees the loss and
		// acquires again waits for the delete.
		done = h.pending.Add()
	}
	h.end(fmt.Errorf("lock: %w: %s: %w", ErrLockLost, h.path, cause))
	if !del {
		return
	}
	// Lost while the session lives: the node was deleted, or written by
	// someone else. A node still there (ours, this incarnation) would
	// keep every other contender, and this Client's next Acquire, waiting
	// behind it until the session ends: it is deleted, as a flow of its
	// own. A node gone or made again by someone else is left alone.
	rt := h.rt
	task.Go(h.sessScope, zkops.DeleteNode(h.path, task.Stat{Czxid: h.token, EphemeralOwner: h.sess.ID}), func(_ task.Unit, err error) {
		done()
		if err != nil && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrClosed) {
			rt.Report(err)
		}
	})
}

// Fenced returns a task that applies ops in one multi together with a check
// that the lock node still exists at the version we acquired it with. So
// ZooKeeper itself rejects the writes of a holder that has lost the lock
// (its session expired and the node went, or someone deleted it), however
// late the request arrives. Then Fenced fails with an error wrapping
// ErrLockLost and the server's error, and the lock is marked lost. A
// check an ACL refuses (task.ErrNoAuth: an operator took READ from the
// lock node) counts as a loss too: the holder can no longer tell that it
// holds, so the hold ends and its node is deleted. On
// success the results are those of ops (without the check's). Another
// failing op gives the usual *task.OpError wrapping a *task.MultiError
// whose Index counts within ops. Connection loss leaves the outcome
// unknown, as for any multi: it is not retried here. A create among ops
// with a nil ACL gets task.OpenACL, as task.CreateWith does. The check
// names the node by its path and version (ZooKeeper's check compares no
// more): an operator who deletes the lock node and creates one again at
// the same path lets a lost holder's late write through, so never
// re-create a lock node by hand.
func (h *Held) Fenced(ops ...task.MultiOp) task.Task[[]task.MultiResult] {
	return func(s *task.Scope, k task.Cont[[]task.MultiResult]) {
		// Sent while the mark is pending, the write is applied after it
		// (the session's order) unless the mark's send was lost with the
		// connection: then the check of the marked version fails although
		// the node is ours; the write was not applied (a multi is atomic),
		// so it is sent again once the mark has settled.
		early := h.markPending
		again := false
		f := zkops.Fenced(h.path, h.version, ops, func(cause, err error) error {
			if early && errors.Is(cause, task.ErrBadVersion) {
				again = true
				return err
			}
			h.lose(cause)
			return fmt.Errorf("lock: fenced write: %w: %w", ErrLockLost, err)
		})
		task.Run(s, f, func(rs []task.MultiResult, err error) {
			if again {
				task.Run(s, afterMark(h, h.Fenced(ops...)), k)
				return
			}
			k(rs, err)
		})
	}
}

// mark writes the handoff mark into the lock node, created at version v
// (handoff.go). It is sent at once, so every later request of the hold
// (fenced writes, the release's delete) is applied after it, in the
// session's order, without waiting for its reply; the node watch, which
// is in no hurry, starts once it has settled. If the send is lost with
// the connection (applied or not), it is retried (markNode); a fenced
// write refused meanwhile for the node's version is sent again once it
// has settled (Fenced). A release does not wait: a delete applied before
// the mark only leaves the node unmarked, and its successor then lists.
// Executor goroutine.
func (h *Held) mark(_ *task.Scope, v int32) {
	h.markPending = true
	task.Exec(h.sessScope, &task.SetDataRequest{Path: h.path, Data: markData, Version: v}, h.marked)
}

// marked is the mark's first reply. A lost send is retried (markNode: the
// version the mark was sent at is the one before h.version). A refusal
// for the node's version means someone else wrote the node before the
// mark (no earlier send of ours can have been applied): the hold is lost,
// as when the node watch sees the write. A node gone or a session ended
// ends the lock too, which Held hears of by itself. Any other refusal
// (task.ErrNoAuth) is passed on to markSettled: the mark was not applied.
func (h *Held) marked(_ task.Response, err error) {
	switch {
	case err == nil:
	case task.IsRetryable(err):
		task.Run(h.sessScope, markNode(h.path, h.version-1), h.markSettled)
		return
	case errors.Is(err, task.ErrBadVersion):
		err = changedBySomeoneElse(h.path, err)
	case errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrSessionExpired) ||
		errors.Is(err, task.ErrClosed) || errors.Is(err, task.ErrCanceled):
		err = nil
	}
	h.markSettled(task.Unit{}, err)
}

// markSettled ends the mark's wait with its outcome: nil if it was
// applied (or the lock ends on its own), else the node does not carry
// our mark (refused, or after a lost send overwritten by someone else).
// Then the Held fences and watches at the create's version again, the one
// before h.version: a mark refused by the node's ACL (task.ErrNoAuth: no
// WRITE) leaves the hold going on unmarked (its successor lists); one
// refused because someone else wrote the node (task.ErrBadVersion) loses
// the hold, and the node, which has left that version, refuses every
// fenced write from now on, also before the loss's delete is applied.
// The loss comes before the waiters run (fenced writes to send again, the
// node watch), which then find it.
func (h *Held) markSettled(_ task.Unit, err error) {
	if err != nil {
		h.version--
		if errors.Is(err, task.ErrBadVersion) {
			h.lose(err)
		}
	}
	h.markPending = false
	ws := h.markWaiters
	h.markWaiters = nil
	for _, w := range ws {
		w()
	}
}

// afterMark runs t once the mark, if pending, has settled.
func afterMark[T any](h *Held, t task.Task[T]) task.Task[T] {
	return func(s *task.Scope, k task.Cont[T]) {
		if !h.markPending {
			t(s, k)
			return
		}
		task.Suspend(s, k, func(resume task.Cont[T]) func() {
			h.markWaiters = append(h.markWaiters, func() { task.Run(s, t, resume) })
			return nil
		})
	}
}

// Release returns a task that releases the lock: it deletes the node,
// retrying past connection loss. A holder whose sequence number is near
// the end of the counter also deletes the directory if it is then empty,
// so the counter restarts (see the package documentation on wrap-around). It is idempotent: a node already gone,
// or a session that ended (the node went with it), is success. If the caller's scope ends first
// (deadline, cancel), the delete goes on as a flow of its own. A delete
// an ACL refuses (an operator closed the directory) fails with
// task.ErrNoAuth and is sent again in the background every twice the
// session timeout until the ACL lets it or the session ends: the node
// goes once the directory opens. Done is
// closed and Err becomes ErrUnlocked when the task starts, before the
// delete. Like any task, it does not start in a scope that has
// already ended (task.Run): to give it back whatever the outcome of the
// work in between, register it with Scope.Defer once taken (a cleanup
// runs as a flow of its own when the scope closes, ended or not).
func (h *Held) Release() task.Task[task.Unit] {
	if h.seq >= zkops.ResetAbove {
		return func(s *task.Scope, k task.Cont[task.Unit]) {
			h.end(ErrUnlocked)
			zkops.Detached(c.Seq(h.deleteNode(), zkops.ResetIfEmpty(h.dir)))(s, k)
		}
	}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		h.end(ErrUnlocked)
		// The first delete is sent by hand (the common case: it is
		// applied, and that is all); anything else goes the general way.
		task.Exec(s, &task.DeleteRequest{Path: h.path, Version: task.AnyVersion}, func(_ task.Response, err error) {
			switch {
			case err == nil:
				h.deleted(s)
				k(task.Unit{}, nil)
			case s.Err() != nil && errors.Is(err, s.Err()):
				// The caller's scope ended first (or had ended; a deadline
				// comes as an *OpError naming the delete): the
				// delete goes on as a flow of its own, as Detached's
				// cleanup would, counted as Detached counts it (a
				// semaphore Client's internal lock).
				done := zkops.Count(s)
				task.Go(s, h.deleteNode(), func(task.Unit, error) { done() })
				if errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
					err = nil // the node went with the session
				}
				k(task.Unit{}, err)
			case task.IsRetryable(err), errors.Is(err, task.ErrNoAuth):
				zkops.Detached(h.deleteNode())(s, k)
			default:
				k(task.Unit{}, goneOK(err))
			}
		})
	}
}

// deleteNode is the release's delete as a task: retried past connection
// loss, a node already gone or a session ended counting as success
// (zkops.GoneOK). A delete an ACL refuses (an operator closed the
// directory) fails with task.ErrNoAuth and goes on in the background
// until the ACL lets it or the session ends (zkops.DeleteNode,
// zkops.KeepDeleting): the node would otherwise keep every other
// contender waiting until the session ends.
func (h *Held) deleteNode() task.Task[task.Unit] {
	return c.Catch(c.Then(c.Retry(task.Delete(h.path, task.AnyVersion), retry), func(task.Unit) task.Task[task.Unit] {
		return task.Func(func(s *task.Scope) (task.Unit, error) {
			h.deleted(s)
			return task.Unit{}, nil
		})
	}), func(err error) task.Task[task.Unit] {
		if errors.Is(err, task.ErrNoAuth) {
			return zkops.DeleteNode(h.path, task.Stat{Czxid: h.token, EphemeralOwner: h.sess.ID})
		}
		return zkops.GoneOK(err)
	})
}

// deleted records that a delete of the release removed the node (a retry
// that finds it gone does not count): its number is remembered (fast.go).
func (h *Held) deleted(s *task.Scope) {
	if h.seq < zkops.ResetAbove && s.Session().ID == h.sess.ID {
		released(s, h.dir, h.seq, true)
	}
}

// goneOK is zkops.GoneOK's verdict on err, as an error.
func goneOK(err error) error {
	if errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
		return nil
	}
	return err
}

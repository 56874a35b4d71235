package rwlock

import (
	"errors"
	"fmt"
	"sync"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Held is a read or write lock that was acquired: its mode, its node, its
// session and its fencing token. Its accessors (Mode, Path, Token, Seq,
// Session, Done, Err, IsHeld) are safe from any goroutine; its tasks
// (Fenced, Release) run on the executor.
//
// The lock ends once: when it is released (Err is ErrUnlocked) or lost
// (Err wraps ErrLockLost and the cause: task.ErrSessionExpired,
// task.ErrClosed, or the node deleted or changed by someone else). Done is
// closed at that moment.
//
// (recipes/lock's Held does the same for the mutex; its fields are its
// own, so this one is written out here, with the mode added.)
type Held struct {
	mode    Mode
	dir     string
	path    string
	seq     int64
	token   int64
	version int32
	sess    task.Session
	ex      *executor.Executor // set by Client, for its Release and Fenced
	m       *Client            // the Client that took it, if any

	mu        sync.Mutex
	uncertain bool
	err       error
	done      chan struct{}

	// post runs a function on the executor goroutine, from any
	// goroutine; nil when the runtime is not an *executor.Executor.
	post  func(func())
	watch sync.Once // the node watch is set at the first Done, Err or IsHeld

	// executor goroutine only
	mon   *task.Scope
	unsub func()
}

// Mode is Read or Write.
func (h *Held) Mode() Mode { return h.mode }

// Path is the lock node's path.
func (h *Held) Path() string { return h.path }

// Seq is the sequence number the server gave the lock node. It is not a
// fencing token: it starts again from zero when the directory is
// recreated.
func (h *Held) Seq() int64 { return h.seq }

// Token is the fencing token: the zxid that created the lock node
// (czxid). A writer's token is larger than the token of every reader and
// writer that held before it, and smaller than every later holder's (see
// the package documentation); readers holding together have tokens in no
// particular order.
func (h *Held) Token() int64 { return h.token }

// Session is the session the lock node belongs to.
func (h *Held) Session() task.Session { return h.sess }

// Done is closed when the lock ends, released or lost. The first call to
// Done, Err or IsHeld sets the watch on the lock node that notices someone
// else deleting or changing it.
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
// false, and true again on reconnect to the same session. Act on it only
// as a hint; writes that must not happen after a loss go through Fenced.
func (h *Held) IsHeld() bool {
	h.watchNodeOnce()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err == nil && !h.uncertain
}

// start follows the session. Executor goroutine.
func (h *Held) start(s *task.Scope) {
	h.unsub = s.Subscribe(h.onSession)
	h.mon = s.Runtime().SessionScope().Child()
	// The session scope ends with the session (expiry) or the executor
	// (Close, Shutdown), after the subscribers have heard of it: the lock
	// ends with it, watched or not. end cancels mon with ErrCanceled.
	h.mon.OnDone(func(err error) {
		if errors.Is(err, task.ErrCanceled) || (canary.On(bugStaleSession) && errors.Is(err, task.ErrSessionExpired)) {
			return
		}
		h.lose(err)
	})
	if ex, ok := s.Runtime().(*executor.Executor); ok {
		h.post = func(fn func()) {
			executor.Submit(ex, task.Func(func(*task.Scope) (task.Unit, error) { fn(); return task.Unit{}, nil }), nil)
		}
		return
	}
	h.watch.Do(func() { s.Schedule(h.watchNode) })
}

// watchNodeOnce has the node watched, once. Any goroutine.
func (h *Held) watchNodeOnce() {
	h.watch.Do(func() {
		if h.post != nil {
			h.post(h.watchNode)
		}
	})
}

// watchNode watches the lock node until the lock ends. Executor goroutine.
func (h *Held) watchNode() {
	mon := h.mon
	if mon == nil {
		return // the lock has ended
	}
	task.RunIn(mon, zkops.WatchNode(h.path, h.version, nil), func(_ task.Unit, err error) {
		if canary.On(bugStaleSession) && errors.Is(err, task.ErrSessionExpired) {
			return
		}
		if !errors.Is(err, task.ErrCanceled) {
			h.lose(err)
		}
	})
}

func (h *Held) setUncertain(u bool) {
	h.mu.Lock()
	h.uncertain = u
	h.mu.Unlock()
}

func (h *Held) onSession(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	switch ev.State {
	case task.StateSuspended:
		h.setUncertain(true)
	case task.StateConnected:
		if ev.SessionID != h.sess.ID && !canary.On(bugStaleSession) {
			h.lose(task.ErrSessionExpired)
			return
		}
		h.setUncertain(false)
	case task.StateExpired:
		if !canary.On(bugStaleSession) {
			h.lose(task.ErrSessionExpired)
		}
	case task.StateClosed:
		h.lose(task.ErrClosed)
	}
}

// end ends the lock with err unless it already ended, and stops following
// it. Executor goroutine.
func (h *Held) end(err error) {
	h.mu.Lock()
	if h.err == nil {
		h.err = err
		close(h.done)
	}
	h.mu.Unlock()
	if h.unsub != nil {
		h.unsub()
		h.unsub = nil
	}
	if h.mon != nil {
		// Cancel ends the node watch, if any; Close detaches mon from the
		// session scope, which outlives the lock.
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
	h.end(fmt.Errorf("%w: %s: %w", ErrLockLost, h.path, cause))
}

// Fenced returns a task that applies ops in one multi together with a
// check that the lock node still exists at the version it was acquired
// with, so ZooKeeper itself rejects the writes of a holder that has lost
// the lock, however late they arrive. Then Fenced fails with an error
// wrapping ErrLockLost and the server's error, and the lock is marked
// lost.
//
// For a writer the check means no other holder, reader or writer, exists
// when the writes are applied. For a reader it means no writer holds: a
// writer holds only once every node below its own is gone, and a writer
// below a reader was gone before the reader held, so while the reader's
// node exists no writer holds (other readers may). A reader's fenced
// writes are therefore ordered against every writer's: use them for what
// a reader may write (a record that it read, a lease).
//
// On success the results are those of ops (without the check's). Another
// failing op gives the usual *task.OpError wrapping a *task.MultiError
// whose Index counts within ops. Connection loss leaves the outcome
// unknown, as for any multi: it is not retried here. A create among ops
// with a nil ACL gets task.OpenACL.
func (h *Held) Fenced(ops ...task.MultiOp) task.Task[[]task.MultiResult] {
	return zkops.Fenced(h.path, h.version, ops, func(cause, err error) error {
		h.lose(cause)
		return fmt.Errorf("rwlock: fenced write: %w: %w", ErrLockLost, err)
	})
}

// Release returns a task that releases the lock: it deletes the node,
// retrying past connection loss. A holder whose sequence number is near
// the end of the counter also deletes the directory if it is then empty,
// so the counter restarts. It is idempotent: a node already gone, or a
// session that ended, is success. If the caller's scope ends first
// (deadline, cancel), the delete goes on as a flow of its own. Done is
// closed and Err becomes ErrUnlocked at once, before the delete.
func (h *Held) Release() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		h.end(ErrUnlocked)
		if h.m != nil {
			h.m.forget(h)
		}
		del := c.Catch(c.Retry(task.Delete(h.path, task.AnyVersion), retry), zkops.GoneOK)
		if h.seq >= zkops.ResetAbove {
			del = c.Seq(del, zkops.ResetIfEmpty(h.dir))
		}
		zkops.Detached(del)(s, k)
	}
}

package rwlock

import (
	"fmt"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
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
type Held struct {
	mode  Mode
	dir   string
	seq   int64
	token int64
	ex    *executor.Executor // set by Client, for its Release and Fenced
	m     *Client            // the Client that took it, if any
	hold  zkops.Holding      // its session and node, until it ends
}

// newHeld returns the lock held in mode on node path, created at stat by
// session sess; pending, if not nil, counts the delete of its node after
// a loss (zkops.Holding.Count).
func newHeld(mode Mode, dir, path string, seq int64, stat task.Stat, sess task.Session, pending *blocking.Pending) *Held {
	h := &Held{mode: mode, dir: dir, seq: seq, token: stat.Czxid}
	h.hold.Init(path, stat, sess, fmt.Errorf("rwlock: %w", ErrLockLost), func() bool { return canary.On(bugStaleSession) })
	h.hold.Count(pending)
	return h
}

// Mode is Read or Write.
func (h *Held) Mode() Mode { return h.mode }

// Path is the lock node's path.
func (h *Held) Path() string { return h.hold.Path() }

// Seq is the sequence number the server gave the lock node. It is not a
// fencing token: it starts again from zero when the directory is
// recreated.
func (h *Held) Seq() int64 { return h.seq }

// Token is the fencing token: the zxid that created the lock node
// (czxid). A writer's token is larger than the token of every reader and
// writer that held before it, and smaller than every later holder's (see
// the package documentation); readers holding together have tokens in no
// particular order. Only holds whose node exists are ordered so: a Held
// handed to a waiter whose node an operator deleted is lost from the
// start, and its token may be below a later writer's.
func (h *Held) Token() int64 { return h.token }

// Session is the session the lock node belongs to.
func (h *Held) Session() task.Session { return h.hold.Session() }

// Done is closed when the lock ends, released or lost. The first call to
// Done, Err or IsHeld sets the watch on the lock node that notices someone
// else deleting or changing it.
func (h *Held) Done() <-chan struct{} { return h.hold.Done() }

// Err is nil while the lock has not ended; then ErrUnlocked after a
// release, or an error wrapping ErrLockLost and its cause.
func (h *Held) Err() error { return h.hold.Err() }

// IsHeld reports whether the lock is held for certain: it has not ended
// and the session is connected. While the session is suspended it is
// false, and true again on reconnect to the same session. Act on it only
// as a hint; writes that must not happen after a loss go through Fenced.
func (h *Held) IsHeld() bool { return h.hold.IsHeld() }

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
	return zkops.Fenced(h.hold.Path(), h.hold.Version(), ops, func(cause, err error) error {
		h.hold.Lose(cause)
		return fmt.Errorf("rwlock: fenced write: %w: %w", ErrLockLost, err)
	})
}

// Release returns a task that releases the lock: it deletes the node,
// retrying past connection loss. A holder whose sequence number is near
// the end of the counter also deletes the directory if it is then empty,
// so the counter restarts. It is idempotent: a node already gone, or a
// session that ended, is success. If the caller's scope ends first
// (deadline, cancel), the delete goes on as a flow of its own. A delete
// an ACL refuses fails the task with task.ErrNoAuth and is sent again in
// the background until the ACL lets it or the session ends
// (zkops.KeepDeleting); a Client counts it until then. Done is
// closed and Err becomes ErrUnlocked when the task starts, before the
// delete. Like any task, it does not start in a scope that has
// already ended (task.Run): to give it back whatever the outcome of the
// work in between, register it with Scope.Defer once taken (a cleanup
// runs as a flow of its own when the scope closes, ended or not).
func (h *Held) Release() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		h.hold.End(ErrUnlocked)
		if h.m != nil {
			h.m.forget(h)
		}
		del := zkops.DeleteMine(h.hold.Path())
		if h.seq >= zkops.ResetAbove {
			del = c.Seq(del, zkops.ResetIfEmpty(h.dir))
		}
		if !canary.On(bugRefusedReleaseUncounted) {
			// A delete an ACL refused goes on in the background
			// (zkops.KeepDeleting): the Client counts it until the node
			// is gone.
			del = h.hold.CountKept(del)
		}
		zkops.Detached(del)(s, k)
	}
}

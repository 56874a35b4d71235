package semaphore

import (
	"fmt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Lease is one of a semaphore's n leases, acquired: its node, its session
// and its token. Its accessors (Path, Token, Seq, Session, Done,
// Err, IsHeld) are safe from any goroutine; its tasks (Fenced, Release)
// run on the executor.
//
// The lease ends once: when it is released (Err is ErrReleased) or lost
// (Err wraps ErrLeaseLost and the cause: task.ErrSessionExpired,
// task.ErrClosed, or the node deleted or changed by someone else). Done
// is closed at that moment.
type Lease struct {
	seq   int64
	token int64
	ex    *executor.Executor // set by Client, for its Release and Fenced
	cl    *Client            // the Client that took it, if any (its Release checks it)
	hold  zkops.Holding      // its session and node, until it ends
}

// newLease returns the lease on node path, created at stat by session
// sess.
func newLease(path string, seq int64, stat task.Stat, sess task.Session) *Lease {
	l := &Lease{seq: seq, token: stat.Czxid}
	l.hold.Init(path, stat, sess, fmt.Errorf("semaphore: %w", ErrLeaseLost), func() bool { return canary.On(bugStaleSession) })
	return l
}

// Path is the lease node's path (PATH/leases/_c_<id>-lease-<seq>).
func (l *Lease) Path() string { return l.hold.Path() }

// Seq is the sequence number the server gave the lease node. The
// semaphore does not order by it; it is not a fencing token.
func (l *Lease) Seq() int64 { return l.seq }

// Token is the zxid that created the lease's node (czxid): it names this
// lease among all leases of the ensemble and is never reused. It does not
// order holders (up to n hold at once), so recipes/fence, which refuses
// lower tokens, is not for it: fence a write with Lease.Fenced, or key a
// store's slot by the token. See "Fencing" in PROTOCOL.md beside this
// package.
func (l *Lease) Token() int64 { return l.token }

// Session is the session the lease node belongs to.
func (l *Lease) Session() task.Session { return l.hold.Session() }

// Done is closed when the lease ends, released or lost. The first call to
// Done, Err or IsHeld sets the watch on the lease node that notices
// someone else deleting or changing it.
func (l *Lease) Done() <-chan struct{} { return l.hold.Done() }

// Err is nil while the lease has not ended; then ErrReleased after a
// release, or an error wrapping ErrLeaseLost and its cause.
func (l *Lease) Err() error { return l.hold.Err() }

// IsHeld reports whether the lease is held for certain: it has not ended
// and the session is connected. While the session is suspended it is
// false (the session may expire on the server without us hearing of it),
// and true again on reconnect to the same session. Act on it only as a
// hint; writes that must not happen after a loss go through Fenced.
func (l *Lease) IsHeld() bool { return l.hold.IsHeld() }

// Fenced returns a task that applies ops in one multi together with a
// check that the lease node still exists at the version it was acquired
// with. So ZooKeeper itself rejects the writes of a holder that has lost
// its lease (its session expired and the node went, or someone deleted
// it), however late the request arrives: a fenced write is applied only
// while its lease is one of the at most n held. Then Fenced fails with an
// error wrapping ErrLeaseLost and the server's error, and the lease is
// marked lost. On success the results are those of ops (without the
// check's). Another failing op gives the usual *task.OpError wrapping a
// *task.MultiError whose Index counts within ops. Connection loss leaves
// the outcome unknown, as for any multi: it is not retried here.
func (l *Lease) Fenced(ops ...task.MultiOp) task.Task[[]task.MultiResult] {
	return zkops.Fenced(l.hold.Path(), l.hold.Version(), ops, func(cause, err error) error {
		l.hold.Lose(cause)
		return fmt.Errorf("semaphore: fenced write: %w: %w", ErrLeaseLost, err)
	})
}

// Release returns a task that returns the lease: it deletes the node,
// retrying past connection loss. It is idempotent: a node already gone,
// or a session that ended (the node went with it), is success. If the
// caller's scope ends first (deadline, cancel), the delete goes on as a
// flow of its own. A delete an ACL refuses fails the task with
// task.ErrNoAuth and is sent again in the background until the ACL lets
// it or the session ends (zkops.KeepDeleting); a Client counts it until
// then. Done is closed and Err becomes ErrReleased when the
// task starts, before the delete. Like any task, it does not start in a scope that has
// already ended (task.Run): to give it back whatever the outcome of the
// work in between, register it with Scope.Defer once taken (a cleanup
// runs as a flow of its own when the scope closes, ended or not).
func (l *Lease) Release() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		l.hold.End(ErrReleased)
		del := zkops.DeleteMine(l.hold.Path())
		if !canary.On(bugRefusedReleaseUncounted) {
			// A delete an ACL refused goes on in the background
			// (zkops.KeepDeleting): the Client counts it until the node
			// is gone.
			del = l.hold.CountKept(del)
		}
		zkops.Detached(del)(s, k)
	}
}

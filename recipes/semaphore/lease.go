package semaphore

import (
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Lease is one of a semaphore's n leases, acquired: its node, its session
// and its fencing token. Its accessors (Path, Token, Seq, Session, Done,
// Err, IsHeld) are safe from any goroutine; its tasks (Fenced, Release)
// run on the executor.
//
// The lease ends once: when it is released (Err is ErrReleased) or lost
// (Err wraps ErrLeaseLost and the cause: task.ErrSessionExpired,
// task.ErrClosed, or the node deleted or changed by someone else). Done
// is closed at that moment.
type Lease struct {
	path    string
	seq     int64
	token   int64
	version int32
	sess    task.Session
	ex      *executor.Executor // set by Client, for Client.Release

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

// Path is the lease node's path (PATH/leases/_c_<id>-lease-<seq>).
func (l *Lease) Path() string { return l.path }

// Seq is the sequence number the server gave the lease node. The
// semaphore does not order by it; it is not a fencing token.
func (l *Lease) Seq() int64 { return l.seq }

// Token is the lease's fencing token: the zxid that created its node
// (czxid). It names this lease among all leases of the ensemble; see
// Fencing in the package documentation for what it does and does not
// order.
func (l *Lease) Token() int64 { return l.token }

// Session is the session the lease node belongs to.
func (l *Lease) Session() task.Session { return l.sess }

// Done is closed when the lease ends, released or lost. The first call to
// Done, Err or IsHeld sets the watch on the lease node that notices
// someone else deleting or changing it.
func (l *Lease) Done() <-chan struct{} {
	l.watchNodeOnce()
	return l.done
}

// Err is nil while the lease has not ended; then ErrReleased after a
// release, or an error wrapping ErrLeaseLost and its cause.
func (l *Lease) Err() error {
	l.watchNodeOnce()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// IsHeld reports whether the lease is held for certain: it has not ended
// and the session is connected. While the session is suspended it is
// false (the session may expire on the server without us hearing of it),
// and true again on reconnect to the same session. Act on it only as a
// hint; writes that must not happen after a loss go through Fenced.
func (l *Lease) IsHeld() bool {
	l.watchNodeOnce()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err == nil && !l.uncertain
}

// start follows the session, as lock.Held does: the lease ends with the
// session (expiry, close), and its node is watched from the first Done,
// Err or IsHeld. Executor goroutine.
func (l *Lease) start(s *task.Scope) {
	l.unsub = s.Subscribe(l.onSession)
	l.mon = s.Runtime().SessionScope().Child()
	l.mon.OnDone(func(err error) {
		if errors.Is(err, task.ErrCanceled) || (canary.On(bugStaleSession) && errors.Is(err, task.ErrSessionExpired)) {
			return
		}
		l.lose(err)
	})
	if ex, ok := s.Runtime().(*executor.Executor); ok {
		l.post = func(fn func()) {
			executor.Submit(ex, task.Func(func(*task.Scope) (task.Unit, error) { fn(); return task.Unit{}, nil }), nil)
		}
		return
	}
	l.watch.Do(func() { s.Schedule(l.watchNode) })
}

func (l *Lease) watchNodeOnce() {
	l.watch.Do(func() {
		if l.post != nil {
			l.post(l.watchNode)
		}
	})
}

// watchNode watches the lease node until the lease ends. Executor
// goroutine.
func (l *Lease) watchNode() {
	mon := l.mon
	if mon == nil {
		return // the lease has ended
	}
	task.RunIn(mon, zkops.WatchNode(l.path, l.version, nil), func(_ task.Unit, err error) {
		if canary.On(bugStaleSession) && errors.Is(err, task.ErrSessionExpired) {
			return
		}
		if !errors.Is(err, task.ErrCanceled) {
			l.lose(err)
		}
	})
}

func (l *Lease) onSession(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	switch ev.State {
	case task.StateSuspended:
		l.setUncertain(true)
	case task.StateConnected:
		if ev.SessionID != l.sess.ID && !canary.On(bugStaleSession) {
			l.lose(task.ErrSessionExpired)
			return
		}
		l.setUncertain(false)
	case task.StateExpired:
		if canary.On(bugStaleSession) {
			return
		}
		l.lose(task.ErrSessionExpired)
	case task.StateClosed:
		l.lose(task.ErrClosed)
	}
}

func (l *Lease) setUncertain(u bool) {
	l.mu.Lock()
	l.uncertain = u
	l.mu.Unlock()
}

// end ends the lease with err unless it already ended, and stops
// following it. Executor goroutine.
func (l *Lease) end(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
		close(l.done)
	}
	l.mu.Unlock()
	if l.unsub != nil {
		l.unsub()
		l.unsub = nil
	}
	if l.mon != nil {
		mon := l.mon
		l.mon = nil
		mon.Cancel(task.ErrCanceled)
		mon.Close()
	}
}

func (l *Lease) lose(cause error) {
	if cause == nil {
		cause = errors.New("unknown cause")
	}
	l.end(fmt.Errorf("%w: %s: %w", ErrLeaseLost, l.path, cause))
}

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
	return zkops.Fenced(l.path, l.version, ops, func(cause, err error) error {
		l.lose(cause)
		return fmt.Errorf("semaphore: fenced write: %w: %w", ErrLeaseLost, err)
	})
}

// Release returns a task that returns the lease: it deletes the node,
// retrying past connection loss. It is idempotent: a node already gone,
// or a session that ended (the node went with it), is success. If the
// caller's scope ends first (deadline, cancel), the delete goes on as a
// flow of its own. Done is closed and Err becomes ErrReleased at once,
// before the delete.
func (l *Lease) Release() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		l.end(ErrReleased)
		zkops.Detached(zkops.Delete(l.path))(s, k)
	}
}

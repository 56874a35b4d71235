package semaphore

import (
	"errors"
	"fmt"
	"slices"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// Known semaphore bugs that tests switch back on (internal/canary), to
// show the simulation catches each one. Each is checked at the spot where
// the bug would be.
const (
	// bugOneTooMany: an acquirer holds when the leases directory has up
	// to N+1 children (an off-by-one in the count).
	bugOneTooMany canary.Name = "semaphore/hold-among-n-plus-one"
	// bugNoInternalLock: acquirers create and count their lease nodes
	// without taking the internal lock. The count alone still never lets
	// more than N hold, but contenders that create at the same time all
	// see more than N children and all wait, each for the others to go:
	// nobody ever holds again.
	bugNoInternalLock canary.Name = "semaphore/count-without-internal-lock"
	// bugStaleSession: a lease trusts itself across a session expiry:
	// the expiry is not taken for the lease's loss.
	bugStaleSession canary.Name = "semaphore/trust-stale-session"
	// bugKeepOnFailure: an attempt that fails after its create keeps its
	// lease node: an orphan of a live session, counted as a lease held.
	bugKeepOnFailure canary.Name = "semaphore/keep-node-on-failure"
	// bugBusyKeepsLock: a TryAcquire that finds no lease free deletes its
	// lease node but leaves its internal lock node to the cleanup flow,
	// which runs after the outcome: the caller hears ErrBusy with a node
	// of the try still there, and its next TryAcquire can find it ahead.
	bugBusyKeepsLock canary.Name = "semaphore/busy-try-keeps-internal-lock"
	// bugRefusedReleaseUncounted: a Client's Release whose delete an ACL
	// refused leaves that delete to go on in the background uncounted:
	// the Client's next acquire, once the ACL is back, counts its own
	// released node as a lease taken (a TryAcquire fails with ErrBusy,
	// every lease free).
	bugRefusedReleaseUncounted canary.Name = "semaphore/refused-release-uncounted"
)

// Errors of the semaphore, tested with errors.Is.
var (
	// ErrLeaseLost: the lease (or, while acquiring, the lease node or
	// the internal lock) is no longer ours: the session expired or was
	// closed, or someone else deleted or changed the node. A fenced write
	// that ZooKeeper rejected because the lease node's check failed wraps
	// it, together with the server's error.
	// It is recipes.ErrLost, the same value in every recipe.
	ErrLeaseLost = recipes.ErrLost
	// ErrReleased is Lease.Err after Release (Lease.Release or Client.Release).
	ErrReleased = errors.New("semaphore: lease released")
	// ErrBusy: TryAcquire found the internal lock taken (another
	// acquirer is waiting or about to hold) or no lease free. It leaves
	// no node behind.
	// It is recipes.ErrBusy, the same value in every recipe.
	ErrBusy = recipes.ErrBusy
)

// retry is the recipes' shared policy for single operations whose outcome
// a retry settles (connection loss, not sent); see zkops.Retry.
var retry = zkops.Retry

// Semaphore is a counting semaphore of n leases on one ZooKeeper path, as task
// chains (the blocking API is Client). A Semaphore holds no state of its
// own: every Acquire is a new acquirer, so one Semaphore may be shared by any
// number of flows and executors.
type Semaphore struct {
	path string
	n    int
	acl  task.ACLProvider
	lk   *lock.Lock
}

// New returns the semaphore of n leases whose nodes live under path:
// PATH/locks (the internal lock) and PATH/leases (the lease nodes), as
// Curator's InterProcessSemaphoreV2 lays them out. Every user of one path
// must give the same n (Curator makes the same demand): the count is a
// convention of the users, not stored on the server. The directories and
// their ancestors are created (persistent) on first use. WithACL sets the
// ACL of the nodes it creates. n < 1 fails with task.ErrInvalidArgument,
// a path ZooKeeper refuses (or "/") with task.ErrInvalidPath.
func New(path string, n int, opts ...Option) (*Semaphore, error) {
	if err := task.ValidatePath(path, false); err != nil {
		return nil, fmt.Errorf("semaphore: path %q: %w", path, err)
	}
	if path == "/" {
		return nil, fmt.Errorf("semaphore: path %q: %w", path, task.ErrInvalidPath)
	}
	if n < 1 {
		return nil, fmt.Errorf("semaphore: %d leases (want at least 1): %w", n, task.ErrInvalidArgument)
	}
	m := &Semaphore{path: path, n: n}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("semaphore: nil option: %w", task.ErrInvalidArgument)
		}
		o.apply(m)
	}
	lk, err := lock.New(m.locks(), lock.WithACL(m.acl))
	if err != nil {
		return nil, err
	}
	m.lk = lk
	return m, nil
}

// Path is the semaphore's path.
func (m *Semaphore) Path() string { return m.path }

// Leases is the number of leases, n.
func (m *Semaphore) Leases() int { return m.n }

func (m *Semaphore) locks() string  { return m.path + "/" + locksDir }
func (m *Semaphore) leases() string { return m.path + "/" + leasesDir }

func (m *Semaphore) child(name string) string { return m.leases() + "/" + name }

// Acquire returns a task that waits for a lease and succeeds with it. See
// the package documentation for the protocol. It fails with the scope's
// error when the scope's deadline passes or it is canceled, with
// task.ErrSessionExpired when the session ends (the nodes went with it),
// with ErrLeaseLost when someone else deleted the lease node or the
// internal lock's node while it waited, or with an operation's error that
// a retry cannot settle. In every failure the lease node, if it was
// created, is deleted and the internal lock released by a cleanup flow of
// its own that outlives the deadline and retries past connection loss.
func (m *Semaphore) Acquire() task.Task[*Lease] { return m.acquire(false, nil) }

// TryAcquire returns a task that takes a lease only if one is free now: it
// takes the internal lock with lock.TryAcquire (so it fails with ErrBusy
// while another acquirer holds it, waiting for a lease or about to hold
// one), creates its lease node and lists the leases; if more than n are
// there it deletes its node and releases the internal lock, and only then
// fails with ErrBusy: when the caller hears ErrBusy no node of the try is
// left. A delete or release of the try that an ACL refuses fails it with
// that refusal (task.ErrNoAuth) instead, the node going once the ACL
// lets it. Whichever way it ends, it leaves no node behind (after other
// failures, by the cleanup of Acquire). Its other errors are Acquire's.
func (m *Semaphore) TryAcquire() task.Task[*Lease] { return m.acquire(true, nil) }

// checkMany refuses a k AcquireMany cannot take.
func (m *Semaphore) checkMany(k int) error {
	if k < 1 || k > m.n {
		return fmt.Errorf("semaphore: acquire %d of %d leases: %w", k, m.n, task.ErrInvalidArgument)
	}
	return nil
}

// AcquireMany returns a task that acquires k leases, one after the other
// (each an Acquire, as Curator's acquire(qty) does), and succeeds with all
// of them. If one fails, those already acquired are released and the
// task fails with that error. k < 1 or k > n fails at once with
// task.ErrInvalidArgument (k > n leases could never be held). Two
// acquirers of several leases each can hold some and wait for the rest
// of each other: give such waits a deadline.
func (m *Semaphore) AcquireMany(k int) task.Task[[]*Lease] { return m.acquireMany(k, nil) }

// acquireMany is AcquireMany, its acquires and its releases counted in
// pending for a Client (nil: not counted; see acquire).
func (m *Semaphore) acquireMany(k int, pending *blocking.Pending) task.Task[[]*Lease] {
	if err := m.checkMany(k); err != nil {
		return task.Fail[[]*Lease](err)
	}
	return func(s *task.Scope, done task.Cont[[]*Lease]) {
		var got []*Lease
		var next func()
		next = func() {
			if len(got) == k {
				task.Resume(s, done, got, nil)
				return
			}
			task.Run(s, m.acquire(false, pending), func(l *Lease, err error) {
				if err != nil {
					if pending != nil {
						// Counted flows of their own: the Client's next
						// acquire waits for them.
						for _, l := range got {
							zkops.StartCleanup(s, pending, l.Release())
						}
						done(nil, err)
						return
					}
					releaseAll(s, got, func() { done(nil, err) })
					return
				}
				got = append(got, l)
				next()
			})
		}
		next()
	}
}

// releaseAll releases ls and then calls k. Each Release is called
// directly, not through task.Run, so that it registers its delete as a
// flow of its own even when s has ended (the deadline that failed the
// acquire).
func releaseAll(s *task.Scope, ls []*Lease, k func()) {
	left := len(ls)
	if left == 0 {
		k()
		return
	}
	for _, l := range ls {
		l.Release()(s, func(task.Unit, error) {
			if left--; left == 0 {
				k()
			}
		})
	}
}

// acquire is the task of Acquire or TryAcquire (try). A Client passes its
// pending: the cleanup of an attempt that fails (the internal lock's
// included), and the delete that follows the loss of the lease it took,
// are counted there, so that the Client's next acquire waits for them
// (see Client); the task face passes nil.
func (m *Semaphore) acquire(try bool, pending *blocking.Pending) task.Task[*Lease] {
	return func(s *task.Scope, k task.Cont[*Lease]) {
		sc := s.Child()
		a := &attempt{m: m, s: sc, sess: s.Session(), try: try, pending: pending}
		a.prefix = prefix(newID(zkops.Draws(s)))
		stop := zkops.CountIn(sc, pending) // the internal lock's cleanup
		k, a.undo = zkops.CleanupOnError(s, pending, a.cleanup(), k)
		task.RunIn(sc, task.Task[*Lease](a.run), func(l *Lease, err error) {
			stop()
			k(l, err)
		})
	}
}

// attempt is one acquirer: its unique prefix, the internal lock once
// held, and once known its lease node's name and Stat. It lives on the
// executor goroutine.
type attempt struct {
	m      *Semaphore
	s      *task.Scope
	sess   task.Session // the session the nodes belong to
	prefix string
	try    bool
	undo   func() // withdraws the cleanup once the lease is held
	// pending counts the cleanup and a lost lease's delete, for a
	// Client (nil: not counted).
	pending *blocking.Pending
	k       task.Cont[*Lease]

	inner *lock.Held // the internal lock, while held
	name  string
	stat  task.Stat
}

func (a *attempt) run(s *task.Scope, k task.Cont[*Lease]) {
	a.k = k
	if canary.On(bugNoInternalLock) {
		a.create()
		return
	}
	take := a.m.lk.Acquire()
	if a.try {
		take = a.m.lk.TryAcquire()
	}
	task.Run(a.s, take, func(h *lock.Held, err error) {
		if err != nil {
			if errors.Is(err, lock.ErrBusy) {
				err = fmt.Errorf("semaphore: %w: the internal lock %s is taken: %w", ErrBusy, a.m.locks(), err)
			} else if errors.Is(err, lock.ErrLockLost) {
				err = fmt.Errorf("semaphore: %w: internal lock: %w", ErrLeaseLost, err)
			}
			a.fail(err)
			return
		}
		a.inner = h
		a.create()
	})
}

func (a *attempt) fail(err error) {
	if canary.On(bugKeepOnFailure) && a.name != "" {
		a.undo()
		if a.inner != nil {
			task.Run(a.s, a.inner.Release(), func(task.Unit, error) { task.Resume(a.s, a.k, nil, err) })
			return
		}
	}
	task.Resume(a.s, a.k, nil, err)
}

// create makes the lease node. A lost reply (connection loss) is settled
// by looking for our prefix owned by our session; a missing directory is
// created.
func (a *attempt) create() {
	path := a.m.child(a.prefix)
	req := &task.CreateRequest{Path: path, Mode: task.EphemeralSequential, ACL: a.m.acl.For(path)}
	task.Run(a.s, task.CreateWith(req), func(cr task.Created, err error) {
		switch {
		case err == nil:
			a.found(task.Base(cr.Path), cr.Stat)
		case errors.Is(err, task.ErrNoNode):
			task.Run(a.s, zkops.EnsurePath(a.m.leases(), a.m.acl), func(_ task.Unit, err error) {
				if err != nil {
					a.fail(err)
					return
				}
				a.create()
			})
		case errors.Is(err, task.ErrConnectionLoss):
			task.Run(a.s, zkops.Owned(a.m.leases(), a.prefix, a.sess.ID), func(ms []zkops.Match, err error) {
				switch {
				case err != nil:
					a.fail(err)
				case len(ms) == 0:
					a.create() // not applied: the listing came after it
				default:
					a.found(ms[0].Name, ms[0].Stat)
				}
			})
		case errors.Is(err, task.ErrNotSent):
			a.create()
		default:
			a.fail(err)
		}
	})
}

// found records our lease node and goes on to count.
func (a *attempt) found(name string, st task.Stat) {
	a.name, a.stat = name, st
	if st.Czxid != 0 {
		a.check()
		return
	}
	// A Conn that answers create without a Stat: read it.
	task.Run(a.s, c.Retry(task.Exists(a.m.child(name)), retry), func(st *task.Stat, err error) {
		switch {
		case err != nil:
			a.fail(err)
		case st == nil:
			a.fail(fmt.Errorf("semaphore: %w: lease node %s deleted", ErrLeaseLost, a.m.child(name)))
		default:
			a.stat = *st
			a.check()
		}
	})
}

// check lists the leases with a watch: if our node is among them and
// there are no more than n, we hold a lease; otherwise wait for the
// listing's watch and check again (while still holding the internal
// lock, as Curator does).
func (a *attempt) check() {
	task.Run(a.s, c.Retry(task.ChildrenW(a.m.leases()), retry), func(cw task.ChildrenWatch, err error) {
		if err != nil {
			if errors.Is(err, task.ErrNoNode) {
				err = fmt.Errorf("semaphore: %w: directory %s deleted", ErrLeaseLost, a.m.leases())
			}
			a.fail(err)
			return
		}
		limit := a.m.n
		if canary.On(bugOneTooMany) {
			limit++
		}
		switch {
		case !slices.Contains(cw.Names, a.name):
			a.fail(fmt.Errorf("semaphore: %w: lease node %s deleted while waiting", ErrLeaseLost, a.m.child(a.name)))
		case len(cw.Names) <= limit:
			a.acquired()
		case a.try:
			a.withdraw(fmt.Errorf("semaphore: %w: %d of %d leases taken", ErrBusy, len(cw.Names)-1, a.m.n))
		default:
			a.wait(cw.Watch)
		}
	})
}

// withdraw ends a try that found no lease free: it deletes the lease node
// and then releases the internal lock, before failing with busy, so the
// caller sees no node of ours. Were the lock node left to the cleanup
// flow, which runs after the outcome, the caller's next TryAcquire could
// find its own finished attempt ahead of it on the internal lock and fail
// with ErrBusy with every lease free. If the delete fails, the try fails
// with that error (not ErrBusy: its node is left) and the cleanup flow
// does both. If the internal lock's release fails (an ACL refuses its
// delete, task.ErrNoAuth, which goes on in the background until allowed),
// the try fails with that error too.
func (a *attempt) withdraw(busy error) {
	task.Run(a.s, zkops.DeleteMine(a.m.child(a.name)), func(_ task.Unit, err error) {
		if err != nil {
			// The node stays (the cleanup flow tries again): ErrBusy
			// would say no node of the try is left.
			a.fail(fmt.Errorf("semaphore: withdrawing a try that found no lease free: %w", err))
			return
		}
		if a.inner == nil || canary.On(bugBusyKeepsLock) {
			a.fail(busy)
			return
		}
		inner := a.inner
		a.inner = nil
		task.Run(a.s, inner.Release(), func(_ task.Unit, err error) {
			a.undo() // nothing of ours is left for the cleanup to do
			if err != nil {
				// The lock node stays for now (a delete an ACL refused
				// goes on in the background until the ACL lets it:
				// lock's Release): ErrBusy would say no node of the try
				// is left.
				a.fail(fmt.Errorf("semaphore: releasing the internal lock of a try that found no lease free: %w", err))
				return
			}
			a.fail(busy)
		})
	})
}

// wait waits for the leases' watch or for a change of the internal lock's
// node (an exists watch on it), whichever comes first, and then checks
// the lock is still ours (stillLocked). A waiter whose lock node was
// deleted (by an operator) is no longer the only one that may create a
// lease node: acquirers that take the lock after it, or that took it at
// the same time (recipes/lock hands the lock to a waiter whose lowest
// predecessor goes, without listing), could wait beside it, each counting
// the others, and nothing in the leases would change to wake any of them.
// Watching the lock node, it gives up at once instead. A watch another
// user of the session takes away (RemoveWatches: a recursive cache of
// PATH/leases stopping) is one more wake-up, not a failure: the waiter
// checks again with new watches.
func (a *attempt) wait(leases *task.Watch) {
	if a.inner == nil {
		task.Run(a.s, leases.Wait(), func(_ task.Event, err error) {
			if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
				a.fail(err)
				return
			}
			a.check()
		})
		return
	}
	ws := a.s.Child()
	woken := false
	wake := func(err error) {
		if woken {
			return // the other wait, abandoned
		}
		woken = true
		ws.Cancel(task.ErrCanceled)
		ws.Close()
		if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
			a.fail(err)
			return
		}
		a.stillLocked()
	}
	task.Run(ws, leases.Wait(), func(_ task.Event, err error) { wake(err) })
	task.Run(ws, zkops.WaitChange(a.inner.Path()), func(_ bool, err error) { wake(err) })
}

// stillLocked makes sure, after a wake-up, that the internal lock's node
// is still ours before counting again (see wait). If it is not, the
// attempt gives up (ErrLeaseLost); its cleanup deletes its lease node,
// which wakes the acquirer that holds the lock now.
func (a *attempt) stillLocked() {
	if a.inner == nil {
		a.check()
		return
	}
	task.Run(a.s, c.Retry(task.Exists(a.inner.Path()), retry), func(st *task.Stat, err error) {
		switch {
		case err != nil:
			a.fail(err)
		case st == nil || st.Czxid != a.inner.Token():
			a.fail(fmt.Errorf("semaphore: %w: the internal lock node %s was deleted while waiting", ErrLeaseLost, a.inner.Path()))
		default:
			a.check()
		}
	})
}

// acquired makes the Lease, releases the internal lock (as Curator does,
// once the lease is held) and hands the lease over.
func (a *attempt) acquired() {
	if err := a.s.Err(); err != nil {
		// The caller gave up (deadline, cancel) as the last listing came
		// in: the cleanup, already started, deletes the node.
		a.fail(err)
		return
	}
	a.undo()
	seq, _ := seqOf(a.name)
	l := newLease(a.m.child(a.name), seq, a.stat, a.sess)
	l.hold.Count(a.pending)
	l.hold.Start(a.s)
	if a.inner == nil {
		task.Resume(a.s, a.k, l, nil)
		return
	}
	inner := a.inner
	a.inner = nil
	// Release is a flow of its own if the caller's scope ends first; its
	// error (a delete an ACL refused, which goes on in the background
	// until allowed) does not undo the lease.
	task.Run(a.s, inner.Release(), func(task.Unit, error) { task.Resume(a.s, a.k, l, nil) })
}

// cleanup withdraws a failed attempt: it deletes the lease node (found by
// prefix and owner if the create's reply was lost) and releases the
// internal lock. It runs as a flow of its own (Scope.Defer), without the
// caller's deadline. If the attempt's session has ended, its ephemeral
// nodes went with it; the internal lock's Release then only ends its
// handle.
func (a *attempt) cleanup() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		releaseInner := func(err error) {
			if a.inner == nil {
				k(task.Unit{}, err)
				return
			}
			inner := a.inner
			a.inner = nil
			task.Run(s, inner.Release(), func(_ task.Unit, err2 error) { k(task.Unit{}, errors.Join(err, err2)) })
		}
		if s.Session().Epoch != a.sess.Epoch {
			releaseInner(nil)
			return
		}
		if a.name != "" {
			task.Run(s, zkops.DeleteMine(a.m.child(a.name)), func(_ task.Unit, err error) { releaseInner(err) })
			return
		}
		task.Run(s, zkops.Owned(a.m.leases(), a.prefix, a.sess.ID), func(ms []zkops.Match, err error) {
			if err != nil {
				releaseInner(err)
				return
			}
			paths := make([]string, len(ms))
			for i, x := range ms {
				paths[i] = a.m.child(x.Name)
			}
			task.Run(s, zkops.DeleteEach(paths, zkops.DeleteMine), func(_ task.Unit, err error) { releaseInner(err) })
		})
	}
}

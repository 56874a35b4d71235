package rwlock

import (
	"errors"
	"fmt"
	"slices"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Known bugs that tests switch back on (internal/canary), to show the
// simulation catches each one. Each is checked at the spot where the bug
// would be.
const (
	// bugReaderPredOnly: a reader looks only at the contender right below
	// it: it holds when that one is a reader, though a writer further
	// down may hold.
	bugReaderPredOnly canary.Name = "rwlock/reader-checks-predecessor-only"
	// bugWriterIgnoresReaders: a writer waits only for writers below it,
	// and holds while readers below it still read.
	bugWriterIgnoresReaders canary.Name = "rwlock/writer-ignores-readers"
	// bugReaderHoldsOnAnyWriter: a reader whose watched writer goes holds
	// without listing even when that writer was not the lowest writer of
	// its listing (another writer below may hold).
	bugReaderHoldsOnAnyWriter canary.Name = "rwlock/reader-holds-when-any-writer-goes"
	// bugWatchLowestWriter: a waiting reader watches the lowest writer
	// below it, as Curator's does, not the nearest: readers behind a
	// second writer wake for nothing when the first goes (a herd).
	bugWatchLowestWriter canary.Name = "rwlock/reader-watches-lowest-writer"
	// bugStaleSession: a holder trusts the lock across a session expiry:
	// reconnecting on a new session is taken for a resume.
	bugStaleSession canary.Name = "rwlock/trust-stale-session"
	// bugRefusedReleaseUncounted: a Client's Release whose delete an ACL
	// refused leaves that delete to go on in the background uncounted:
	// the Client's next acquire, once the ACL is back, queues behind its
	// own node (a try fails with ErrBusy, the lock free).
	bugRefusedReleaseUncounted canary.Name = "rwlock/refused-release-uncounted"
	// bugKeepLastWriter: a Client records the write hold of the acquire
	// whose outcome it saw last, also when that is a hold whose node had
	// gone (an operator's delete) seen after the live one of another
	// goroutine's acquire: once the lost one's loss is known, the Client
	// no longer refuses re-entry (a try fails with ErrBusy behind its own
	// node).
	bugKeepLastWriter canary.Name = "rwlock/keep-last-writer"
)

// Errors of the lock, tested with errors.Is.
var (
	// ErrLockLost: the lock (or, while acquiring, the contender node) is
	// no longer ours: the session expired or was closed, or someone else
	// deleted or changed the node. A fenced write that ZooKeeper rejected
	// because the node's check failed wraps it, together with the
	// server's error (task.ErrNoNode, task.ErrBadVersion).
	// It is recipes.ErrLost, the same value in every recipe.
	ErrLockLost = recipes.ErrLost
	// ErrUnlocked is Held.Err after Release.
	ErrUnlocked = errors.New("rwlock: unlocked")
	// ErrBusy: TryAcquire or TryAcquireRead found that it would have to
	// wait. Its own node is deleted (a try whose delete an ACL refused
	// fails with that refusal instead).
	// It is recipes.ErrBusy, the same value in every recipe.
	ErrBusy = recipes.ErrBusy
	// ErrAlreadyHeld: Client.Acquire or TryAcquire while the same Client
	// holds the lock in either mode, or AcquireRead or TryAcquireRead
	// while it holds the write lock (no re-entry, no upgrade, no
	// downgrade: see the package doc).
	// It is recipes.ErrAlreadyHeld, the same value in every recipe.
	ErrAlreadyHeld = recipes.ErrAlreadyHeld
)

var retry = zkops.Retry

// RWLock is a readers-writer lock on one ZooKeeper directory. It holds no
// state of its own: every acquire is a new contender, so one RWLock may be
// shared by any number of flows and executors.
type RWLock struct {
	dir string
	acl task.ACLProvider
}

// New returns the lock whose contenders live under dir. The directory and
// its ancestors are created (persistent) on first use. WithACL sets the
// ACL of the nodes it creates.
func New(dir string, opts ...Option) (*RWLock, error) {
	if err := task.ValidatePath(dir, false); err != nil {
		return nil, fmt.Errorf("rwlock: directory %q: %w", dir, err)
	}
	if dir == "/" {
		return nil, fmt.Errorf("rwlock: directory %q: %w", dir, task.ErrInvalidPath)
	}
	l := &RWLock{dir: dir}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("rwlock: nil option: %w", task.ErrInvalidArgument)
		}
		o.apply(l)
	}
	return l, nil
}

// Dir is the lock's directory.
func (l *RWLock) Dir() string { return l.dir }

func (l *RWLock) child(name string) string { return l.dir + "/" + name }

// Acquire returns a task that waits for the write lock (exclusive) and
// succeeds with it held. See the package documentation for the protocol.
// It fails with the scope's error when the scope's deadline passes or it
// is canceled, with task.ErrSessionExpired when the session ends (the
// contender node went with it), with ErrLockLost when someone else
// deleted the contender node, or with an operation's error that a retry
// cannot settle. In every failure the contender node, if it was created,
// is deleted by a cleanup flow of its own that outlives the deadline and
// retries past connection loss.
func (l *RWLock) Acquire() task.Task[*Held] { return l.acquire(Write, false, nil) }

// AcquireRead returns a task that waits for the read lock (shared) and
// succeeds with it held: it holds once no writer's node is below its own,
// so it waits behind a writer that queued before it even while only
// readers hold. Its errors and cleanup are Acquire's.
func (l *RWLock) AcquireRead() task.Task[*Held] { return l.acquire(Read, false, nil) }

// TryAcquire returns a task that takes the write lock only if it need not
// wait: when the first listing after its create shows another contender
// below it, it deletes its node and fails with ErrBusy. Whichever way it
// ends it leaves no node behind: a delete that fails (an ACL refuses it,
// task.ErrNoAuth) fails the try with that error, not ErrBusy, and is
// left to the cleanup flow of Acquire, which goes on until the ACL lets
// it. Its other errors are Acquire's.
func (l *RWLock) TryAcquire() task.Task[*Held] { return l.acquire(Write, true, nil) }

// TryAcquireRead is TryAcquire for the read lock: it fails with ErrBusy
// when a writer's node is below its own.
func (l *RWLock) TryAcquireRead() task.Task[*Held] { return l.acquire(Read, true, nil) }

// acquire is the task of Acquire, AcquireRead, TryAcquire or
// TryAcquireRead. A Client passes its pending: the cleanup of an attempt
// that fails, and the delete that follows the loss of the lock it took,
// are counted there, so that the Client's next acquire waits for them
// (see Client); the task face passes nil.
func (l *RWLock) acquire(mode Mode, try bool, pending *blocking.Pending) task.Task[*Held] {
	return func(s *task.Scope, k task.Cont[*Held]) {
		sc := s.Child()
		a := &attempt{l: l, s: sc, sess: s.Session(), mode: mode, try: try, pending: pending}
		a.prefix = prefix(zkops.NewID(zkops.Draws(s)), mode)
		k, a.undo = zkops.CleanupOnError(s, pending, a.cleanup(), k)
		task.RunIn(sc, task.Task[*Held](a.run), k)
	}
}

// attempt is one contender: its unique prefix, and once known the node's
// name and Stat. It lives on the executor goroutine.
type attempt struct {
	l      *RWLock
	s      *task.Scope
	sess   task.Session // the session the contender node belongs to
	mode   Mode
	try    bool
	prefix string
	undo   func() // withdraws the cleanup once the lock is held
	// pending counts the cleanup and a lost hold's delete, for a
	// Client (nil: not counted).
	pending *blocking.Pending
	k       task.Cont[*Held]

	name string
	seq  int64
	stat task.Stat
}

func (a *attempt) run(s *task.Scope, k task.Cont[*Held]) {
	a.k = k
	a.create()
}

func (a *attempt) fail(err error) { task.Resume(a.s, a.k, nil, err) }

// create makes the contender node, with the first listing of the
// directory sent right behind it (a session's requests are applied in
// order, so it is read after the create; it is used only if it shows our
// node).
func (a *attempt) create() {
	path := a.l.child(a.prefix)
	req := &task.CreateRequest{Path: path, Mode: task.EphemeralSequential, ACL: a.l.acl.For(path)}
	var (
		cr      task.Created
		cerr    error
		listing *task.ChildList
		pending = 2
	)
	join := func() {
		if pending--; pending == 0 {
			a.created(cr, cerr, listing)
		}
	}
	task.Run(a.s, task.CreateWith(req), func(v task.Created, err error) {
		cr, cerr = v, err
		join()
	})
	task.Run(a.s, task.Children(a.l.dir), func(v task.ChildList, err error) {
		if err == nil {
			listing = &v
		}
		join()
	})
}

// created handles the create's outcome.
func (a *attempt) created(cr task.Created, err error, listing *task.ChildList) {
	switch {
	case err == nil:
		a.found(task.Base(cr.Path), cr.Stat, listing)
	case errors.Is(err, task.ErrNoNode):
		task.Run(a.s, zkops.EnsurePath(a.l.dir, a.l.acl), func(_ task.Unit, err error) {
			if err != nil {
				a.fail(err)
				return
			}
			a.create()
		})
	case errors.Is(err, task.ErrConnectionLoss):
		// The create may or may not have been applied: look for our
		// prefix among the nodes of our session.
		task.Run(a.s, zkops.Owned(a.l.dir, a.prefix, a.sess.ID), func(m []zkops.Match, err error) {
			switch {
			case err != nil:
				a.fail(err)
			case len(m) == 0:
				a.create()
			default:
				a.found(m[0].Name, m[0].Stat, nil)
			}
		})
	case errors.Is(err, task.ErrNotSent):
		a.create()
	case errors.Is(err, task.ErrNodeExists):
		// A sequential create clashes only when the counter is stuck at
		// its maximum (zkops.Exhausted): wait for the reset.
		a.afterReset()
	default:
		a.fail(err)
	}
}

// found records our node and takes our place in the queue; listing, if
// not nil, is the directory as read right after the create.
func (a *attempt) found(name string, st task.Stat, listing *task.ChildList) {
	m, ok := parse(name)
	if !ok {
		a.fail(fmt.Errorf("rwlock: server named the contender %q: no sequence after %q", name, a.mode.tag()))
		return
	}
	a.name, a.seq, a.stat = name, m.seq, st
	if zkops.Exhausted(m.seq) {
		a.restart()
		return
	}
	if st.Czxid == 0 {
		// A Conn that answers create without a Stat: read it.
		task.Run(a.s, c.Retry(task.Exists(a.l.child(name)), retry), func(st *task.Stat, err error) {
			switch {
			case err != nil:
				a.fail(err)
			case st == nil:
				a.fail(fmt.Errorf("rwlock: %w: contender %s deleted", ErrLockLost, a.l.child(name)))
			default:
				a.stat = *st
				a.check()
			}
		})
		return
	}
	if listing != nil && slices.Contains(listing.Names, name) {
		a.decide(listing.Names)
		return
	}
	a.check()
}

// check lists the directory without a watch and decides.
func (a *attempt) check() {
	task.Run(a.s, c.Retry(task.Children(a.l.dir), retry), func(cl task.ChildList, err error) {
		if err != nil {
			if errors.Is(err, task.ErrNoNode) {
				err = fmt.Errorf("rwlock: %w: directory %s deleted", ErrLockLost, a.l.dir)
			}
			a.fail(err)
			return
		}
		a.decide(cl.Names)
	})
}

// blocker says, for the contender at index i of queue q, whether it holds
// the lock and otherwise which contender it waits for (w) and whether it
// may hold as soon as that one is gone, without listing (head).
//
//   - A writer holds when it is the lowest contender; otherwise it waits
//     for the next lower contender, reader or writer. If that one is the
//     lowest, its going leaves the writer lowest.
//   - A reader holds when no writer is below it; otherwise it waits for
//     the highest writer below it. If that one is the lowest writer of the
//     listing, its going leaves no writer below the reader (any writer
//     created since has a higher number).
func blocker(q []member, i int) (holds bool, w int, head bool) {
	if q[i].mode == Write {
		if canary.On(bugWriterIgnoresReaders) {
			return highestWriterBelow(q, i)
		}
		if i == 0 {
			return true, 0, false
		}
		return false, i - 1, i == 1
	}
	if canary.On(bugReaderPredOnly) {
		if i == 0 || q[i-1].mode == Read {
			return true, 0, false
		}
		return false, i - 1, false
	}
	return highestWriterBelow(q, i)
}

// highestWriterBelow is the reader's rule (blocker).
func highestWriterBelow(q []member, i int) (holds bool, w int, head bool) {
	w = -1
	lowest := -1
	for j := range i {
		if q[j].mode == Write {
			if lowest < 0 {
				lowest = j
			}
			w = j
		}
	}
	if w < 0 {
		return true, 0, false
	}
	if canary.On(bugWatchLowestWriter) {
		w = lowest
	}
	return false, w, w == lowest || canary.On(bugReaderHoldsOnAnyWriter)
}

// decide finds our place in a listing of the directory read after our
// create and holds or waits.
func (a *attempt) decide(names []string) {
	q := queue(names)
	i := slices.IndexFunc(q, func(m member) bool { return m.name == a.name })
	if i < 0 {
		a.fail(fmt.Errorf("rwlock: %w: contender %s deleted while waiting", ErrLockLost, a.l.child(a.name)))
		return
	}
	holds, w, head := blocker(q, i)
	switch {
	case holds:
		a.acquired()
	case a.try:
		busy := fmt.Errorf("rwlock: %w: %s is behind %s", ErrBusy, a.l.child(a.name), a.l.child(q[w].name))
		// Withdraw before failing, so the caller sees no node of ours
		// (else the cleanup flow has nothing left to do, and a Client's
		// next acquire need not wait for it). If the delete fails (an
		// ACL refuses it: task.ErrNoAuth), the try fails with that error,
		// not ErrBusy, which would say no node of the try is left; the
		// cleanup flow deletes it (a refused delete goes on in the
		// background until the ACL lets it: zkops.KeepDeleting).
		task.Run(a.s, zkops.DeleteMine(a.l.child(a.name)), func(_ task.Unit, err error) {
			if err != nil {
				a.fail(fmt.Errorf("rwlock: withdrawing %s, a try behind %s: %w", a.l.child(a.name), a.l.child(q[w].name), err))
				return
			}
			a.undo()
			a.fail(busy)
		})
	default:
		a.waitFor(a.l.child(q[w].name), head)
	}
}

// waitFor watches pred with exists; when it is gone (already, or later)
// or its watch fires, list again, unless it was gone and head says that
// leaves us holding (blocker). A watch another user of the session took
// away (RemoveWatches: a recursive cache of pred stopping) is one more
// wake-up (zkops.WaitChange): list again.
func (a *attempt) waitFor(pred string, head bool) {
	task.Run(a.s, zkops.WaitChange(pred), func(gone bool, err error) {
		switch {
		case err != nil:
			a.fail(err)
		case gone && head:
			a.acquired()
		default:
			a.check()
		}
	})
}

func (a *attempt) acquired() {
	a.undo()
	h := newHeld(a.mode, a.l.dir, a.l.child(a.name), a.seq, a.stat, a.sess, a.pending)
	h.hold.Start(a.s)
	task.Resume(a.s, a.k, h, nil)
}

// cleanup deletes the contender node of a failed attempt. It runs as a
// flow of its own (Scope.Defer), without the caller's deadline. If the
// node's name is not known (the create's reply was lost), it deletes the
// children with our prefix that belong to the attempt's session. If that
// session has ended, its ephemeral nodes went with it: nothing to do.
func (a *attempt) cleanup() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != a.sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		if a.name != "" {
			task.Run(s, zkops.DeleteMine(a.l.child(a.name)), k)
			return
		}
		task.Run(s, zkops.Owned(a.l.dir, a.prefix, a.sess.ID), func(m []zkops.Match, err error) {
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			paths := make([]string, len(m))
			for i, x := range m {
				paths[i] = a.l.child(x.Name)
			}
			task.Run(s, zkops.DeleteEach(paths, zkops.DeleteMine), k)
		})
	}
}

// restart withdraws a contender with an exhausted number (zkops.Exhausted)
// and creates it again once the directory has been emptied and recreated.
func (a *attempt) restart() {
	task.Run(a.s, zkops.DeleteMine(a.l.child(a.name)), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.name, a.seq, a.stat = "", 0, task.Stat{}
		a.afterReset()
	})
}

// afterReset waits until the directory is empty, deletes it (its counter
// goes with it) and creates our node again. A try waits for no one: it
// goes on only if the directory's counter can name nodes again at once
// (the directory gone, or emptied now), and fails with ErrBusy when any
// node is in it (a contender, another client's node, a stray), which the
// wait would wait for. A watch on the directory another user of the
// session takes away is one more wake-up, as in waitFor.
func (a *attempt) afterReset() {
	if a.try {
		task.Run(a.s, zkops.TryEmptyDir(a.l.dir), func(free bool, err error) {
			switch {
			case err != nil:
				a.fail(err)
			case !free:
				a.fail(fmt.Errorf("rwlock: %w: the directory's sequence counter is exhausted and %s is not empty", ErrBusy, a.l.dir))
			default:
				a.create()
			}
		})
		return
	}
	task.Run(a.s, zkops.EmptyDir(a.l.dir), func(_ task.Unit, err error) {
		switch {
		case err != nil: // (a removed watch is a wake-up in EmptyDir)
			a.fail(err)
		default:
			a.create()
		}
	})
}

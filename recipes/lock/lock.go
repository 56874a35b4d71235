package lock

import (
	"errors"
	"fmt"
	"slices"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Known lock bugs that tests switch back on (internal/canary), to show the
// simulation catches each one. Each is checked at the spot where the bug
// would be.
const (
	// bugNoPrefix: contender nodes are named "lock-<seq>" with no unique
	// part, so a create whose reply was lost cannot be found again and is
	// created a second time: the first node is an orphan of a live session
	// that blocks the queue.
	bugNoPrefix canary.Name = "lock/no-unique-prefix"
	// bugWatchLowest: every waiter watches the lowest contender instead of
	// its predecessor: one release wakes the whole queue (herd).
	bugWatchLowest canary.Name = "lock/watch-lowest"
	// bugLossIsFailure: connection loss on the create is taken for a
	// create that was not applied: the attempt fails with no cleanup and
	// a node that was applied stays behind, an orphan.
	bugLossIsFailure canary.Name = "lock/connection-loss-is-failure"
	// bugStaleSession: the holder trusts the lock across a session
	// expiry: reconnecting on a new session is taken for a resume.
	bugStaleSession canary.Name = "lock/trust-stale-session"
	// bugExhaustedSeq: a contender whose sequence number is exhausted
	// (the directory's counter ran out: see wrap.go) queues like any
	// other; contenders then tie at 2147483647 and a newcomer can sort
	// ahead of the holder.
	bugExhaustedSeq canary.Name = "lock/queue-exhausted-sequence"
	// bugHoldOnAnyPred: a waiter whose predecessor is deleted holds the
	// lock without listing even when the predecessor was not the lowest
	// contender (it was a waiter that gave up or lost its session).
	bugHoldOnAnyPred canary.Name = "lock/hold-when-any-predecessor-goes"
	// bugTryKeepsNode: a TryAcquire that finds the lock taken fails
	// without deleting its contender node: an orphan of a live session
	// that blocks the queue.
	bugTryKeepsNode canary.Name = "lock/try-keeps-its-node"
	// bugTryHoldsAnywhere: a TryAcquire holds the lock wherever its node
	// sits in the queue.
	bugTryHoldsAnywhere canary.Name = "lock/try-holds-anywhere"
	// bugRefusedReleaseUncounted: a Client's Release whose delete an ACL
	// refused leaves that delete to go on in the background uncounted: the
	// Client's next acquire, once the ACL is back, queues behind its own
	// node (a TryAcquire fails with ErrBusy, the lock free).
	bugRefusedReleaseUncounted canary.Name = "lock/refused-release-uncounted"
	// bugKeepLastWon: a Client records the hold of the acquire whose
	// outcome it saw last, also when that is a hold whose node had gone
	// (an operator's delete) seen after the live one of another
	// goroutine's acquire: once the lost one's loss is known, the Client
	// no longer refuses re-entry (a TryAcquire fails with ErrBusy behind
	// its own node).
	bugKeepLastWon canary.Name = "lock/keep-last-won"
)

// Errors of the lock, tested with errors.Is.
var (
	// ErrLockLost: the lock (or, while acquiring, the contender node) is
	// no longer ours: the session expired or was closed, or someone else
	// deleted or changed the node. A fenced write that ZooKeeper rejected
	// because the lock node's check failed wraps it, together with the
	// server's error (task.ErrNoNode, task.ErrBadVersion).
	// It is recipes.ErrLost, the same value in every recipe.
	ErrLockLost = recipes.ErrLost
	// ErrUnlocked is Held.Err after Release.
	ErrUnlocked = errors.New("lock: unlocked")
	// ErrBusy: TryAcquire found another contender ahead of it
	// (the lock held, or waited for). Its own node is deleted.
	// It is recipes.ErrBusy, the same value in every recipe.
	ErrBusy = recipes.ErrBusy
	// ErrAlreadyHeld: Client.Acquire or TryAcquire while the same Client
	// holds the lock (the lock is not re-entrant; see the package doc).
	// It is recipes.ErrAlreadyHeld, the same value in every recipe.
	ErrAlreadyHeld = recipes.ErrAlreadyHeld
)

// retry is the recipes' shared policy for single operations whose outcome
// a retry settles (connection loss, not sent); see zkops.Retry.
var retry = zkops.Retry

// Lock is a mutual-exclusion lock on one ZooKeeper directory. A Lock holds
// no state of its own: every Acquire is a new contender, so one Lock may
// be shared by any number of flows and executors.
type Lock struct {
	dir string
	acl task.ACLProvider
	// listHandoff: the handoff of before the mark (a waiter lists after
	// its predecessor goes unless it was the head; no mark is written),
	// kept for the benchmark that compares the two (export_test.go).
	listHandoff bool
	// acq and tryAcq are the tasks Acquire and TryAcquire return, made
	// once: a Task is a recipe, run any number of times.
	acq, tryAcq task.Task[*Held]
}

// New returns the lock whose contenders live under dir. The directory and
// its ancestors are created (persistent) on first use. WithACL sets the
// ACL of the nodes it creates.
func New(dir string, opts ...Option) (*Lock, error) {
	if err := task.ValidatePath(dir, false); err != nil {
		return nil, fmt.Errorf("lock: directory %q: %w", dir, err)
	}
	if dir == "/" {
		return nil, fmt.Errorf("lock: directory %q: %w", dir, task.ErrInvalidPath)
	}
	l := &Lock{dir: dir}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("lock: nil option: %w", task.ErrInvalidArgument)
		}
		o.apply(l)
	}
	l.acq, l.tryAcq = l.acquire(false, nil), l.acquire(true, nil)
	return l, nil
}

// Dir is the lock's directory.
func (l *Lock) Dir() string { return l.dir }

func (l *Lock) child(name string) string { return l.dir + "/" + name }

// Acquire returns a task that waits for the lock and succeeds with the
// held lock. See the package documentation for the protocol. It fails with
// the scope's error when the scope's deadline passes or it is canceled,
// with task.ErrSessionExpired when the session ends (the contender node
// went with it), with ErrLockLost when someone else deleted the contender
// node, or with an operation's error that a retry cannot settle. In every
// failure the contender node, if it was created, is deleted by a cleanup
// flow of its own that outlives the deadline and retries past connection
// loss.
func (l *Lock) Acquire() task.Task[*Held] { return l.acq }

// TryAcquire returns a task that takes the lock only if no other contender
// is ahead of it: it creates its contender node as Acquire does and, when
// the first listing after the create shows another contender below it
// (the lock held, or waited for), deletes its node and then fails with
// ErrBusy, without queueing. Whichever way it ends, it leaves no node
// behind: if that delete fails, or the attempt fails otherwise, the node is
// deleted by the same cleanup flow as Acquire's, past lost replies and
// deadlines. A delete an ACL refuses fails the try with that refusal
// (task.ErrNoAuth), not ErrBusy, since its node is still there; the
// cleanup goes on until the ACL lets it. Its other errors are Acquire's.
func (l *Lock) TryAcquire() task.Task[*Held] { return l.tryAcq }

// acquire is the task of Acquire or TryAcquire (try). A Client passes its
// pending: the cleanup of an attempt that fails, and the delete that
// follows the loss of the lock it took, are counted there, so that the
// Client's next acquire waits for them (see Client); the task face
// passes nil.
func (l *Lock) acquire(try bool, pending *blocking.Pending) task.Task[*Held] {
	return func(s *task.Scope, k task.Cont[*Held]) {
		a := &attempt{l: l, s: s, k: k, sess: s.Session(), try: try, began: s.Now(), bg: pending}
		if canary.On(bugNoPrefix) {
			a.base = l.child(lockTag)
		} else {
			hi, lo := zkops.Draws(s)
			a.base = contenderPath(l.dir, hi, lo)
		}
		a.prefix = a.base[len(l.dir)+1:]
		a.create()
	}
}

// attempt is one contender: its unique prefix, and once known the node's
// name and Stat. It lives on the executor goroutine.
//
// It runs its steps in the caller's scope, written by hand so that an
// acquire allocates little: every step's continuation is one of its
// methods, and the Held it becomes is part of it. Every way the attempt
// ends but success goes through fail (the scope's end reaches the
// continuation of the request or wait in flight, as its error), which
// starts the cleanup; the waits that could outlive a decision (the two
// watches on the predecessor) run in a child scope closed on deciding.
type attempt struct {
	h      Held // what the attempt becomes once it holds
	l      *Lock
	s      *task.Scope
	began  time.Time    // on the executor's clock, for the Observer
	sess   task.Session // the session the contender node belongs to
	base   string       // DIR/_c_<id>-lock-: the path the create sends
	prefix string       // base without DIR/
	// noCleanup: the cleanup is withdrawn (a canary's failure that leaves
	// the node behind).
	noCleanup bool
	k         task.Cont[*Held]

	// The create and the listing sent behind it: replies not in yet, and
	// what came back.
	pending int
	cr      task.Created
	cerr    error
	listing []string
	listed  bool

	path string // the contender node, once known
	name string // its name in DIR
	seq  int64
	stat task.Stat
	fast bool // the create was sent without a listing behind it (fast.go)
	// dirCzxid is the directory's czxid as the exists sent right behind
	// a fast create read it (0: not read): the incarnation the create's
	// number counts in (fastHold).
	dirCzxid int64
	lost     bool // a create's reply was lost: the node was found by listing
	try      bool // TryAcquire: fail with ErrBusy instead of waiting
	// waited: a listing showed a contender below ours, so a successor
	// may have seen more than one node below it: mark the node on
	// holding (handoff.go).
	waited bool
	marked bool // the mark was sent (on holding, or early by a canary)
	// bg counts the cleanup and a lost hold's delete, for a Client (nil:
	// not counted).
	bg *blocking.Pending
}

// fail ends the attempt with err. Unless it was withdrawn, the cleanup
// (which deletes our node, if any) starts first, as a flow of its own
// bound to no deadline.
func (a *attempt) fail(err error) {
	if !a.noCleanup {
		a.noCleanup = true
		zkops.StartCleanup(a.s, a.bg, a.cleanup())
	}
	task.Resume(a.s, a.k, nil, err)
}

// create makes the contender node. A lost reply (connection loss) is
// settled by looking for our prefix; a missing directory is created.
//
// The first listing of the directory is sent right behind the create,
// without waiting for its reply: a session's requests are applied in
// order, so it is read after the create, and an uncontended acquire costs
// one round trip. The listing is used only if it shows the node the
// create made (the proof it was read after it); otherwise the attempt
// lists again (check).
func (a *attempt) create() {
	req := &task.CreateRequest{Path: a.base, Mode: task.EphemeralSequential, ACL: a.l.acl.For(a.base)}
	a.cr, a.cerr, a.listing, a.listed, a.dirCzxid = task.Created{}, nil, nil, false, 0
	a.fast = fastTry(a.s, a.l.dir)
	a.pending = 2
	task.Exec(a.s, req, a.onCreate)
	if a.fast {
		// Expecting to be alone (see fast.go): no listing behind the
		// create, but a plain exists of the directory, which says which
		// incarnation the create's number counts in; found lists if
		// either says otherwise.
		task.Exec(a.s, &task.ExistsRequest{Path: a.l.dir}, a.onDirStat)
		return
	}
	task.Exec(a.s, &task.GetChildrenRequest{Path: a.l.dir}, a.onListing)
}

func (a *attempt) onDirStat(r task.Response, err error) {
	if err == nil {
		a.dirCzxid = r.Stat.Czxid
	}
	a.join()
}

func (a *attempt) onCreate(r task.Response, err error) {
	a.cr, a.cerr = task.Created{Path: r.Path, Stat: r.Stat}, err
	a.join()
}

func (a *attempt) onListing(r task.Response, err error) {
	if err == nil {
		a.listing, a.listed = r.Children, true
	}
	a.join()
}

// join goes on once the create's reply, and the listing's if one was
// sent, are in.
func (a *attempt) join() {
	if a.pending--; a.pending > 0 {
		return
	}
	a.created(a.cr, a.cerr)
}

// created handles the create's outcome; a.listing, if a.listed, is the
// directory as read right after it.
func (a *attempt) created(cr task.Created, err error) {
	switch {
	case err == nil:
		a.found(cr.Path, cr.Stat, a.listed)
	case errors.Is(err, task.ErrNoNode):
		task.Run(a.s, zkops.EnsurePath(a.l.dir, a.l.acl), func(_ task.Unit, err error) {
			if err != nil {
				a.fail(err)
				return
			}
			a.create()
		})
	case errors.Is(err, task.ErrConnectionLoss):
		a.lost = true // the number is found again by listing: no fast path
		if canary.On(bugLossIsFailure) {
			a.noCleanup = true
			a.fail(err)
			return
		}
		if canary.On(bugNoPrefix) {
			a.create() // nothing to look for
			return
		}
		a.recover()
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

// recover settles a create whose reply was lost: if a child with our
// prefix exists and belongs to our session, the create was applied and
// that is our node; otherwise it was not, and we create again.
func (a *attempt) recover() {
	task.Run(a.s, ours(a.l, a.prefix, a.sess.ID), func(m []zkops.Match, err error) {
		switch {
		case err != nil:
			a.fail(err)
		case len(m) == 0:
			a.create()
		default:
			a.found(a.l.child(m[0].Name), m[0].Stat, false)
		}
	})
}

// found records our node, at path, and starts waiting in the queue; if
// listed, a.listing is a listing of the directory read after the create.
func (a *attempt) found(path string, st task.Stat, listed bool) {
	name := path[len(a.l.dir)+1:]
	seq, ok := seqOf(name)
	if !ok {
		a.fail(fmt.Errorf("lock: server named the contender %q: no sequence after %q", name, lockTag))
		return
	}
	a.path, a.name, a.seq, a.stat = path, name, seq, st
	if zkops.Exhausted(seq) && !canary.On(bugExhaustedSeq) {
		a.restart()
		return
	}
	if canary.On(bugMarkAtCreate) && st.Czxid != 0 && !a.marked {
		a.marked = true
		task.Run(a.s.Runtime().SessionScope(), markNode(path, st.Version), func(task.Unit, error) {})
	}
	if st.Czxid != 0 {
		if !a.lost && a.fast && fastHold(a.s, a.l.dir, seq, a.dirCzxid) {
			a.acquired()
			return
		}
		if listed && slices.Contains(a.listing, name) {
			a.decide(a.listing)
			return
		}
		a.check()
		return
	}
	// A Conn that answers create without a Stat: read it.
	task.Run(a.s, c.Retry(task.Exists(path), retry), func(st *task.Stat, err error) {
		switch {
		case err != nil:
			a.fail(err)
		case st == nil:
			a.fail(fmt.Errorf("lock: %w: contender %s deleted", ErrLockLost, path))
		default:
			a.stat = *st
			a.check()
		}
	})
}

// check lists the children without a watch: lowest holds the lock;
// otherwise wait for the next lower contender only.
func (a *attempt) check() {
	task.Run(a.s, c.Retry(task.Children(a.l.dir), retry), func(cl task.ChildList, err error) {
		if err != nil {
			if errors.Is(err, task.ErrNoNode) {
				err = fmt.Errorf("lock: %w: directory %s deleted", ErrLockLost, a.l.dir)
			}
			a.fail(err)
			return
		}
		a.decide(cl.Names)
	})
}

// decide finds our place in a listing of the directory read after our
// create: lowest holds the lock; otherwise wait for the next lower
// contender only.
func (a *attempt) decide(names []string) {
	q := queue(names)
	i := -1
	for j, ct := range q {
		if ct.Name == a.name {
			i = j
			break
		}
	}
	switch {
	case i < 0:
		a.fail(fmt.Errorf("lock: %w: contender %s deleted while waiting", ErrLockLost, a.path))
	case i == 0 || (a.try && canary.On(bugTryHoldsAnywhere)):
		if len(q) == 1 {
			uncontended(a.s, a.l.dir)
		}
		a.acquired()
	case a.try:
		busy := fmt.Errorf("lock: %w: %s is behind %s", ErrBusy, a.path, a.l.child(q[i-1].Name))
		if canary.On(bugTryKeepsNode) {
			a.noCleanup = true
			a.fail(busy)
			return
		}
		// Withdraw before failing, so the caller sees no node of ours.
		// If the delete fails (an ACL refuses it: task.ErrNoAuth), the
		// try fails with that error, not ErrBusy, which would say no
		// node of the try is left; the cleanup flow deletes it (a
		// refused delete goes on in the background until the ACL lets
		// it: zkops.KeepDeleting; a delete of a node already gone is
		// success).
		task.Run(a.s, zkops.DeleteMine(a.path), func(_ task.Unit, err error) {
			if err != nil {
				a.fail(fmt.Errorf("lock: withdrawing %s, a try behind %s: %w", a.path, a.l.child(q[i-1].Name), err))
				return
			}
			a.fail(busy)
		})
	case canary.On(bugWatchLowest):
		a.waitFor(a.l.child(q[0].Name), false)
	default:
		a.waited = true
		a.waitFor(a.l.child(q[i-1].Name), i == 1 || canary.On(bugHoldOnAnyPred))
	}
}

// waitFor watches pred with exists; when it is gone (already, or later)
// or its watch fires, list again (zkops.WaitChange). If pred was the
// lowest contender of our last listing (head) and it is gone, we hold the
// lock without listing: every contender below us then is gone, and any
// created since has a higher number. Otherwise the waiter also holds
// without listing if pred was marked before it went (waitMarked).
func (a *attempt) waitFor(pred string, head bool) {
	if !head && !a.l.listHandoff {
		a.waitMarked(pred)
		return
	}
	task.RunIn(a.s.Child(), zkops.WaitChange(pred), func(gone bool, err error) {
		switch {
		case err != nil: // (a removed watch is a wake-up in WaitChange)
			a.fail(err)
		case gone && head:
			a.acquired()
		default:
			a.wake()
		}
	})
}

// acquired makes the Held. A contender that waited marks its node (see
// handoff.go) before anything else of the hold is sent, so the mark comes
// before its fenced writes and its release in the session's order; the
// hold does not wait for the mark's reply. The node's version is then
// one more than at the create.
func (a *attempt) acquired() {
	a.noCleanup = true
	h := &a.h
	h.dir, h.path, h.seq, h.token, h.version, h.sess = a.l.dir, a.path, a.seq, a.stat.Czxid, a.stat.Version, a.sess
	h.done = make(chan struct{})
	h.pending = a.bg
	mark := a.waited && !a.marked && !a.l.listHandoff
	if mark || a.marked {
		h.version++
	}
	h.start(a.s)
	h.observe(a.s, a.began)
	if mark {
		h.mark(a.s, a.stat.Version)
	}
	watchDir(a.s, a.l.dir)
	task.Resume(a.s, a.k, h, nil)
}

// cleanup deletes the contender node of a failed attempt. It runs as a
// flow of its own (task.Go, from fail), without the caller's deadline. If the
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
			task.Run(s, zkops.DeleteMine(a.path), func(v task.Unit, err error) {
				if err == nil {
					released(s, a.l.dir, a.seq, false) // remembered by a canary only
				}
				k(v, err)
			})
			return
		}
		task.Run(s, ours(a.l, a.prefix, a.sess.ID), func(m []zkops.Match, err error) {
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

// ours returns l's children named with prefix whose ephemeral owner is
// session id (zkops.Owned). A missing directory has none.
func ours(l *Lock, prefix string, id int64) task.Task[[]zkops.Match] {
	return zkops.Owned(l.dir, prefix, id)
}

package barrier

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Known bugs of the double barrier (see internal/canary).
const (
	// bugBlindCreate: Enter creates its node again after connection loss
	// on the create, without looking for the node the lost create may have
	// made: one participant can then count twice.
	bugBlindCreate canary.Name = "barrier/double-blind-create"
	// bugLeaveTrustsEvent: Leave ends when the node it watches is deleted,
	// without listing again.
	bugLeaveTrustsEvent canary.Name = "barrier/double-leave-trusts-event"
	// bugEnterNoWait: DoubleClient.Enter does not wait for the cleanup
	// of its earlier Enter whose ctx ended: the session can then have two
	// participant nodes, counted twice.
	bugEnterNoWait canary.Name = "barrier/double-enter-no-wait"
	// bugLeaveAgainLetsIn: a DoubleClient's Leave of any participant it
	// entered, an earlier one given to Leave before, lets the next Enter
	// in while the current participant's node stands: two nodes of one
	// session, counted twice.
	bugLeaveAgainLetsIn canary.Name = "barrier/double-leave-again-lets-in"
	// bugLeaveWithoutSync: Leave lists the participants without a sync
	// first: on a server that lags behind the leader the listing can miss
	// a participant, and Leave ends while it is there.
	bugLeaveWithoutSync canary.Name = "barrier/double-leave-without-sync"
	// bugEnterBySequence: Enter counts the arrivals by its own node's
	// sequence number (the directory's counter) as well as by the
	// listing: once nodes went (a canceled Enter's cleanup, an expiry, a
	// counter set ahead), it passes with fewer than Size participants
	// there.
	bugEnterBySequence canary.Name = "barrier/double-enter-by-sequence"
	// bugLeaveUncounted: DoubleClient.Leave does not count the delete of
	// its participant's node among the Client's clean-ups: after a Leave
	// whose ctx ended, the next Enter's create can land before that
	// delete, and the session counts twice.
	bugLeaveUncounted canary.Name = "barrier/double-leave-uncounted"
)

// ErrParticipantLost: a participant's node was deleted by someone else
// while it waited to enter: it no longer counts, and may Enter again. (A
// node created again at its path counts in its place: Enter waits on, and
// fails so only once that node goes too.)
var ErrParticipantLost = errors.New("barrier: participant node deleted")

// ReadyNode is the name of the node the last participant to arrive
// creates in the barrier's directory.
const ReadyNode = "ready"

// partPrefix starts the name of every participant node:
// "_p_<id>-<sequence>".
const partPrefix = "_p_"

// DoubleBarrier is ZooKeeper's double barrier: Enter blocks until Size
// participants have arrived, Leave blocks until every participant has
// left. A DoubleBarrier holds no state of its own: every Enter is a new
// participant, so one value may be shared by any number of flows and
// executors. A directory serves one round (see the package documentation).
type DoubleBarrier struct {
	dir string
	n   int
	acl task.ACLProvider
}

// NewDouble returns the double barrier for n participants whose nodes live
// under dir. n < 1 fails with an error wrapping task.ErrInvalidArgument; an
// invalid dir (or the root, or under /zookeeper) with one wrapping
// task.ErrInvalidPath. WithACL sets the ACL of the nodes it creates.
func NewDouble(dir string, n int, opts ...Option) (*DoubleBarrier, error) {
	if n < 1 {
		return nil, fmt.Errorf("barrier: %d participants: %w", n, task.ErrInvalidArgument)
	}
	if err := validDir("directory", dir); err != nil {
		return nil, err
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &DoubleBarrier{dir: dir, n: n, acl: o.acl}, nil
}

// Dir is the barrier's directory.
func (d *DoubleBarrier) Dir() string { return d.dir }

// Size is the number of participants Enter waits for.
func (d *DoubleBarrier) Size() int { return d.n }

func (d *DoubleBarrier) child(name string) string { return d.dir + "/" + name }

// Participant is one participant that has entered: its node and the
// session the node belongs to. Its accessors are safe from any goroutine.
type Participant struct {
	d     *DoubleBarrier
	name  string
	sess  task.Session
	rt    task.Runtime  // the executor it entered on
	owner *DoubleClient // the DoubleClient that entered it, if any
}

// Path is the participant's node.
func (p *Participant) Path() string { return p.d.child(p.name) }

// Session is the session the participant's node belongs to.
func (p *Participant) Session() task.Session { return p.sess }

// part is a participant node seen in a listing.
type part struct {
	name string
	seq  int64
}

// seqOf parses a participant node's name, "_p_<id>-" and 10 digits. Other
// names (the ready node, foreign children) are not participants.
func seqOf(name string) (int64, bool) {
	if !strings.HasPrefix(name, partPrefix) || len(name) < len(partPrefix)+11 {
		return 0, false
	}
	digits := name[len(name)-10:]
	if name[len(name)-11] != '-' {
		return 0, false
	}
	for _, ch := range []byte(digits) {
		if ch < '0' || ch > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// participants returns the participant nodes among names, lowest sequence
// first.
func participants(names []string) []part {
	q := make([]part, 0, len(names))
	for _, n := range names {
		if seq, ok := seqOf(n); ok {
			q = append(q, part{n, seq})
		}
	}
	slices.SortFunc(q, func(a, b part) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), strings.Compare(a.name, b.name))
	})
	return q
}

func indexOf(q []part, name string) int {
	return slices.IndexFunc(q, func(p part) bool { return p.name == name })
}

// Enter returns a task that registers a participant and waits until Size
// participants have arrived; see the package documentation for the
// protocol. It fails with the scope's error (deadline, cancel),
// task.ErrSessionExpired or task.ErrClosed when the session ends (the node
// went with it), ErrParticipantLost if someone else deleted the node, or
// an operation error a retry cannot settle. On every failure the node, if
// it was made, is deleted by a cleanup flow that outlives the caller's
// deadline and retries past connection loss. A nil or zero DoubleBarrier
// (not made by NewDouble) fails with an error wrapping
// task.ErrInvalidArgument: its directory would be the root.
func (d *DoubleBarrier) Enter() task.Task[*Participant] {
	if d == nil || d.dir == "" {
		return task.Fail[*Participant](errNil("DoubleBarrier"))
	}
	return d.enter(nil)
}

// enter is Enter whose cleanup, when it has one to run, is counted in
// pending (nil: not counted) from the start of the entry until the
// cleanup has ended, so that a DoubleClient's next Enter can wait for it.
// The cleanup starts as a flow of its own when the entry fails, as a
// Scope.Defer cleanup would; an executor that has stopped ends it
// unstarted (task.ErrClosed), which ends its count too.
func (d *DoubleBarrier) enter(pending *blocking.Pending) task.Task[*Participant] {
	return func(s *task.Scope, k task.Cont[*Participant]) {
		done := pending.Add()
		sc := s.Child()
		e := &entry{d: d, s: sc, sess: s.Session(), prefix: partPrefix + newID(zkops.Draws(s)) + "-"}
		task.RunIn(sc, task.Task[*Participant](e.run), func(p *Participant, err error) {
			if err == nil {
				done()
				k(p, nil)
				return
			}
			// Counted until the node is gone, refused by an ACL or not
			// (zkops.UntilAllowed): a DoubleClient's next Enter must not
			// add a second node of this session to the count.
			task.Go(s, zkops.UntilAllowed(e.cleanup()), func(_ task.Unit, err error) {
				done()
				if err != nil {
					s.Runtime().Report(err)
				}
			})
			k(nil, err)
		})
	}
}

// entry is one participant on its way in. Executor goroutine only.
type entry struct {
	d      *DoubleBarrier
	s      *task.Scope
	sess   task.Session
	prefix string
	k      task.Cont[*Participant]

	name    string
	readyW  *task.Watch // set before our create
	readyOK bool        // the ready node existed before our create
	selfW   *task.Watch // on our node, set before the listing that counts us
}

func (e *entry) fail(err error) { task.Resume(e.s, e.k, nil, err) }

func (e *entry) ready() string { return e.d.child(ReadyNode) }

func (e *entry) run(s *task.Scope, k task.Cont[*Participant]) {
	e.k = k
	task.Run(e.s, c.Retry(task.ExistsW(e.ready()), retry), func(sw task.StatWatch, err error) {
		if err != nil {
			e.fail(err)
			return
		}
		e.readyW, e.readyOK = sw.Watch, sw.Stat != nil
		e.create()
	})
}

// create makes the participant node (zkops.CreateUnique). A lost reply
// (connection loss) is settled by looking for our prefix: a child with it
// owned by our session is our node; if there is none the create was not
// applied (the listing comes after it in the session's order), so create
// again. A missing directory is created.
//
// A child with our prefix that another session owns (or none: a
// persistent node) is one of two things: our node, deleted and created
// again at its path by someone else (our create was applied), or the node
// of an earlier process with the same executor seed, which drew the same
// prefix and whose session has not expired yet. Either way it is counted
// already, so we take its name and do not create again (that would count
// us twice): we wait as if it were our node (watchSelf), and fail with
// ErrParticipantLost once it goes. It is never deleted as ours.
func (e *entry) create() {
	path := e.d.child(e.prefix)
	req := &task.CreateRequest{Path: path, Mode: task.EphemeralSequential, ACL: e.d.acl.For(path)}
	settle := func() task.Task[[]string] {
		if canary.On(bugBlindCreate) {
			return nil // create again without looking
		}
		return c.Then(ours(e.d, e.prefix, e.sess.ID), func(names []string) task.Task[[]string] {
			if len(names) > 0 {
				return task.Value(names)
			}
			return zkops.Prefixed(e.d.dir, e.prefix)
		})
	}
	task.Run(e.s, zkops.CreateUnique(req, e.d.dir, e.d.acl, settle), func(name string, err error) {
		if err != nil {
			e.fail(err)
			return
		}
		e.found(name)
	})
}

func (e *entry) found(name string) {
	e.name = name
	if e.readyOK {
		e.pass()
		return
	}
	e.watchSelf(e.check)
}

// lost fails the entry: our node is gone.
func (e *entry) lost() {
	e.fail(fmt.Errorf("%w: %s", ErrParticipantLost, e.d.child(e.name)))
}

// watchSelf reads our node with a watch, then runs next; missing, it
// fails the entry with ErrParticipantLost. The watch is set before the
// listing that counts us, so a deletion after that listing wakes us
// (await) rather than leaving us waiting for a ready node that may never
// come: it costs one read per waiting participant, and wakes nobody else.
//
// A node someone created again at our path (an operator's, any owner) is
// listed under our name and counted in our place, so we wait on, watching
// it: failing would make us enter again with a second node, and count
// twice. It is not taken for ours otherwise: no cleanup and no Leave
// deletes it (see Leave).
func (e *entry) watchSelf(next func()) {
	task.Run(e.s, c.Retry(task.ExistsW(e.d.child(e.name)), retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			e.fail(err)
		case sw.Stat == nil:
			e.lost()
		default:
			e.selfW = sw.Watch
			next()
		}
	})
}

// check lists the directory: with Size participants or more, create the
// ready node and pass; otherwise wait for the ready node's watch.
func (e *entry) check() {
	task.Run(e.s, c.Retry(task.Children(e.d.dir), retry), func(cl task.ChildList, err error) {
		if err != nil {
			if errors.Is(err, task.ErrNoNode) {
				err = fmt.Errorf("%w: directory %s deleted", ErrParticipantLost, e.d.dir)
			}
			e.fail(err)
			return
		}
		q := participants(cl.Names)
		if indexOf(q, e.name) < 0 {
			e.lost()
			return
		}
		if len(q) >= e.d.n || canary.On(bugEnterBySequence) && e.seqArrived() {
			e.makeReady()
			return
		}
		e.await()
	})
}

// seqArrived is bugEnterBySequence's count: our node's number says
// Size-1 nodes were made before it.
func (e *entry) seqArrived() bool {
	n, err := strconv.Atoi(e.name[len(e.name)-10:])
	return err == nil && n >= e.d.n-1
}

// await waits for the first of the ready node's watch and our node's.
// After our node's, it reads our node again (watchSelf): gone, we no
// longer count (ErrParticipantLost); there (written, or created again by
// someone), it waits on. After the ready node's wake-up it checks again,
// with a new watch: the ready node there means pass, else list. A watch
// another user of the session took away (RemoveWatches) is a wake-up too.
func (e *entry) await() {
	task.Run(e.s, firstOf(e.readyW, e.selfW), func(f fired, err error) {
		switch {
		case err != nil && !errors.Is(err, task.ErrWatchRemoved):
			e.fail(err)
		case f.watch == e.readyW:
			e.readyFired()
		default:
			e.watchSelf(e.await)
		}
	})
}

func (e *entry) readyFired() {
	task.Run(e.s, c.Retry(task.ExistsW(e.ready()), retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			e.fail(err)
		case sw.Stat != nil:
			e.pass()
		default:
			e.readyW = sw.Watch
			e.check()
		}
	})
}

// fired is the outcome of firstOf: the watch that fired first, and its
// event.
type fired struct {
	watch *task.Watch
	ev    task.Event
}

// firstOf waits for the first of two watches to fire. The wait on the
// other is abandoned (its child scope closes): a watch cannot be taken
// back from the server, so it stays set until its node changes or the
// session ends, and its event then goes nowhere. A watch that ends with
// the session gives its error (task.ErrSessionExpired, task.ErrClosed);
// so does the scope's end.
func firstOf(a, b *task.Watch) task.Task[fired] {
	return func(s *task.Scope, k task.Cont[fired]) {
		ws := s.Child()
		done := false
		on := func(w *task.Watch) task.Cont[task.Event] {
			return func(ev task.Event, err error) {
				if done {
					return // the loser, abandoned by ws.Close
				}
				done = true
				ws.Close()
				k(fired{w, ev}, err)
			}
		}
		task.Run(ws, a.Wait(), on(a))
		if !done {
			task.Run(ws, b.Wait(), on(b))
		}
	}
}

func (e *entry) makeReady() {
	create := c.Retry(zkops.Create(e.ready(), nil, task.Persistent, e.d.acl), retry)
	task.Run(e.s, create, func(_ string, err error) {
		if err != nil && !errors.Is(err, task.ErrNodeExists) {
			e.fail(err)
			return
		}
		e.pass()
	})
}

func (e *entry) pass() {
	task.Resume(e.s, e.k, &Participant{d: e.d, name: e.name, sess: e.sess, rt: e.s.Runtime()}, nil)
}

// cleanup deletes the node of a failed entry. It runs as a flow of its own
// (task.Go), without the caller's deadline. If the node's name is not
// known (the create's reply was lost), it deletes the children with our
// prefix that belong to the entry's session. If that session has ended,
// its ephemeral nodes went with it: nothing to do. It deletes only a node
// of the entry's session (zkops.DeleteOwned), so a node someone created
// again at our node's path is left alone, even after a lost reply.
func (e *entry) cleanup() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != e.sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		if e.name != "" {
			task.Run(s, zkops.DeleteOwned(e.d.child(e.name), e.sess.ID), k)
			return
		}
		task.Run(s, ours(e.d, e.prefix, e.sess.ID), func(names []string, err error) {
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			loop := c.Loop(0, func(i int) bool { return i < len(names) }, func(i int) task.Task[int] {
				return c.Map(zkops.DeleteOwned(e.d.child(names[i]), e.sess.ID), func(task.Unit) int { return i + 1 })
			})
			task.Run(s, c.Map(loop, func(int) task.Unit { return task.Unit{} }), k)
		})
	}
}

// ours returns d's children named with prefix whose ephemeral owner is
// session id (zkops.Owned). A missing directory has none.
func ours(d *DoubleBarrier, prefix string, id int64) task.Task[[]string] {
	return c.Map(zkops.Owned(d.dir, prefix, id), zkops.Names)
}

// Leave returns a task that removes the participant and waits until every
// participant has left; see the package documentation for the protocol.
// Leave may be run again after a failure, also on a new session (the node
// went with the old one): it then only waits. If the caller's scope ends
// first, the participant's node is still deleted, by a cleanup flow of its
// own. It fails with the scope's error, task.ErrSessionExpired or
// task.ErrClosed, or an operation error a retry cannot settle. Like any
// task, it does not start in a scope that has already ended (task.Run):
// to have the node deleted whatever the outcome of the work in between,
// register the leave with Scope.Defer once entered (a cleanup runs as a
// flow of its own when the scope closes, ended or not).
func (p *Participant) Leave() task.Task[task.Unit] {
	if p == nil || p.d == nil {
		return task.Fail[task.Unit](errNil("Participant"))
	}
	return p.leave(nil)
}

// leave is Leave whose delete of the participant's node is counted in
// pending (nil: not counted) from the start until the node is known gone
// (deleted, by us or someone else, or not ours), or, when the leave fails
// before that, until its cleanup has ended, retried past an ACL's refusals
// (zkops.UntilAllowed): a DoubleClient's next Enter waits for it, as for a
// failed Enter's cleanup, so as not to add a second node of this session.
// The wait for the other participants is not counted. The cleanup starts
// as a flow of its own when the leave fails, as a Scope.Defer cleanup
// would; an executor that has stopped ends it unstarted (task.ErrClosed),
// which ends its count too.
func (p *Participant) leave(pending *blocking.Pending) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		gone := pending.Add()
		sc := s.Child()
		l := &leaving{p: p, s: sc, gone: gone}
		task.RunIn(sc, task.Task[task.Unit](func(_ *task.Scope, k task.Cont[task.Unit]) {
			l.k = k
			l.check()
		}), func(v task.Unit, err error) {
			if err == nil {
				gone()
				k(v, nil)
				return
			}
			cleanup := p.deleteOwn()
			if pending != nil {
				cleanup = zkops.UntilAllowed(cleanup)
			}
			task.Go(s, cleanup, func(_ task.Unit, err error) {
				gone()
				if err != nil {
					s.Runtime().Report(err)
				}
			})
			k(task.Unit{}, err)
		})
	}
}

// deleteOwn deletes the participant's node unless its session has ended
// (the node went with it). Only a node of the participant's session is
// deleted (zkops.DeleteOwned): not one someone created again at its path.
// A session's epoch says so only on the executor the participant entered
// on: run on another one (whose epoch may differ while the participant's
// session lives), it deletes the node if it is still that session's.
func (p *Participant) deleteOwn() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Runtime() == p.rt && s.Session().Epoch != p.sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		task.Run(s, zkops.DeleteOwned(p.Path(), p.sess.ID), k)
	}
}

type leaving struct {
	p *Participant
	s *task.Scope
	k task.Cont[task.Unit]

	// left: our node is deleted (by us or by someone else), or the node
	// at its path is not ours. From then on a node listed under our name
	// is someone else's, waited for like any other participant's.
	left bool
	// gone ends the count of our node's delete (leave); more calls do
	// nothing.
	gone func()
}

// isGone notes that our node is gone, or not ours.
func (l *leaving) isGone() {
	l.left = true
	l.gone()
}

func (l *leaving) done(err error) { task.Resume(l.s, l.k, task.Unit{}, err) }

// remove deletes our node if it is ours: a read, then a delete at the
// version read. A delete whose reply was lost (or that found the version
// changed) is not sent again as it was: zkops.DeleteNode reads again and
// deletes only the incarnation read first, so a node someone created
// again at our path is never taken for ours. It tells next whether a node
// that is not ours is at our path.
func (l *leaving) remove(next func(foreign bool)) {
	path := l.p.Path()
	removed := func(_ task.Unit, err error) {
		if err != nil {
			l.done(err)
			return
		}
		l.isGone()
		next(false)
	}
	task.Run(l.s, c.Retry(task.Exists(path), retry), func(st *task.Stat, err error) {
		switch {
		case err != nil:
			task.Run(l.s, zkops.GoneOK(err), removed) // an ended session took the node
		case st == nil:
			removed(task.Unit{}, nil)
		case st.EphemeralOwner != l.p.sess.ID:
			l.isGone()
			next(true)
		default:
			task.Run(l.s, task.Delete(path, st.Version), func(_ task.Unit, err error) {
				switch {
				case err == nil:
					removed(task.Unit{}, nil)
				case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent), errors.Is(err, task.ErrBadVersion):
					task.Run(l.s, zkops.DeleteNode(path, *st), removed)
				default:
					task.Run(l.s, zkops.GoneOK(err), removed)
				}
			})
		}
	})
}

func (l *leaving) check() {
	d := l.p.d
	// The listing follows a sync: the session's server may lag behind
	// the leader, and a listing from before a participant's create (one
	// that joined after the reads this session has seen) would let us
	// leave while it is there. The two are sent together
	// (zkops.AfterSync).
	list := zkops.AfterSync(d.dir, task.Children(d.dir))
	if canary.On(bugLeaveWithoutSync) {
		list = task.Children(d.dir)
	}
	task.Run(l.s, c.Retry(list, retry), func(cl task.ChildList, err error) {
		if errors.Is(err, task.ErrNoNode) {
			l.done(nil)
			return
		}
		if err != nil {
			l.done(err)
			return
		}
		q := participants(cl.Names)
		i := -1
		if !l.left {
			i = indexOf(q, l.p.name)
		}
		if i < 0 {
			l.isGone() // not listed after a sync: deleted, or gone with the session
		}
		switch {
		case len(q) == 0:
			l.done(nil)
		case len(q) == 1 && i == 0:
			l.remove(func(foreign bool) {
				if foreign {
					l.check() // wait for that node like any other
					return
				}
				l.done(nil)
			})
		case i == 0:
			l.watch(d.child(q[len(q)-1].name))
		case i > 0:
			l.remove(func(bool) { l.watch(d.child(q[0].name)) })
		default:
			l.watch(d.child(q[0].name))
		}
	})
}

// watch waits for path to be gone, then lists again. A watch another user
// of the session took away (RemoveWatches) is a wake-up too: list again.
func (l *leaving) watch(path string) {
	task.Run(l.s, c.Retry(task.ExistsW(path), retry), func(sw task.StatWatch, err error) {
		if err != nil {
			l.done(err)
			return
		}
		if sw.Stat == nil {
			l.check()
			return
		}
		task.Run(l.s, sw.Watch.Wait(), func(_ task.Event, err error) {
			if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
				l.done(err)
				return
			}
			if canary.On(bugLeaveTrustsEvent) {
				l.done(nil)
				return
			}
			l.check()
		})
	})
}

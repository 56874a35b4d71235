package group

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Known bugs of members (see internal/canary).
const (
	// bugNoReregister: after a session expiry the member is not registered
	// again on the new session (its node went with the old one).
	bugNoReregister canary.Name = "group/member-no-reregister"
	// bugCleanupAfterJoin: Join withdraws its cleanup after its scope has
	// closed, so the cleanup deletes the node Join just made.
	bugCleanupAfterJoin canary.Name = "group/join-cleanup-after-success"
	// bugKeeperTakesAnyNode: a member's keeper takes any node of its
	// session at its path for the member's, also one another Join of the
	// id on the session made after the member's node went: both report
	// it registered, and the member's Leave deletes the other's node.
	bugKeeperTakesAnyNode canary.Name = "group/keeper-takes-any-node"
	// bugSettleUnsynced: after a lost create reply, register reads the
	// node without a sync: on a member that has not applied the create,
	// an older incarnation of the node, of the session and gone since,
	// passes for the one the create made; the node the create made is
	// then no one's, and every Join of the id waits for it until the
	// session ends.
	bugSettleUnsynced canary.Name = "group/settle-unsynced"
	// bugSettleTakesOver: a Join that finds another session's node at
	// its path deletes it and makes its own (a take-over) rather than
	// waiting until it goes: the other process's registration is lost.
	bugSettleTakesOver canary.Name = "group/settle-takes-over"
	// bugSettleAnyOwner: after a lost create reply, register's settle
	// takes the node at its path for the one its create made whoever
	// owns it: another session's (the other process of the id, an
	// operator's) passes for the member's, and Join succeeds with no
	// node of its own, deleting nothing (a take-over unseen by the
	// journal's judge of own deletes).
	bugSettleAnyOwner canary.Name = "group/settle-any-owner"
)

// ErrLeft is Member.Err after Leave (unless the membership had ended
// before: Err then keeps why).
var ErrLeft = errors.New("group: member left")

// Group is a set of members registered as ephemeral nodes under one
// directory. A Group holds no state: one value may be shared by any
// number of flows and executors.
type Group struct {
	dir string
	acl task.ACLProvider
	// A view's listings (after a sync, and without: bugListWithoutSync)
	// and its exists of a missing directory: values, built once, by the
	// first view (viewTasks).
	viewOnce            sync.Once
	listSync, listPlain task.Task[task.ChildrenWatch]
	existsW             task.Task[task.StatWatch]
}

// New returns the group whose members live under dir. The directory and
// its ancestors are created (persistent) on first use. An invalid dir (or
// the root, or under /zookeeper) fails with an error wrapping
// task.ErrInvalidPath. WithACL sets the ACL of the nodes it creates.
func New(dir string, opts ...Option) (*Group, error) {
	if err := task.ValidatePath(dir, false); err != nil {
		return nil, fmt.Errorf("group: directory %q: %w", dir, err)
	}
	if dir == "/" || dir == "/zookeeper" || len(dir) > 11 && dir[:11] == "/zookeeper/" {
		return nil, fmt.Errorf("group: directory %q: reserved: %w", dir, task.ErrInvalidPath)
	}
	g := &Group{dir: dir}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("group: nil option: %w", task.ErrInvalidArgument)
		}
		o.apply(g)
	}
	return g, nil
}

// Dir is the group's directory.
func (g *Group) Dir() string { return g.dir }

func (g *Group) path(id string) string { return g.dir + "/" + id }

// Member is a registration in a group. While it has not left, it keeps
// its node registered: on every new session (after an expiry) it creates
// the node again, and if someone deletes the node it creates it again.
// Its accessors are safe from any goroutine; Leave runs on the executor.
type Member struct {
	g    *Group
	id   string
	data []byte

	mu         sync.Mutex
	sess       task.Session // the session of the latest registration
	registered bool
	err        error
	done       chan struct{}

	// executor goroutine only
	rt     task.Runtime
	unsub  func()
	keeper *task.Scope
	keptOn int64 // the session the keeper runs on
	// node is the member's node as last known registered: its Czxid names
	// the incarnation, and it is the only one Leave deletes. maybe is a
	// session on which a create of the keeper may have made a node that
	// node does not name (0: none); Leave reads which (see deleteNode).
	node  task.Stat
	maybe int64
}

// ID is the member's id, the name of its node.
func (m *Member) ID() string { return m.id }

// Path is the member's node.
func (m *Member) Path() string { return m.g.path(m.id) }

// Session is the session of the member's latest registration.
func (m *Member) Session() task.Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sess
}

// Registered reports whether the member's node is known to exist on the
// current session: false from an expiry until the registration on the
// new session is made, and after the member ended.
func (m *Member) Registered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.registered && m.err == nil
}

// Done is closed when the membership ends: Leave (Err is ErrLeft), the
// executor closed (task.ErrClosed), or an error no retry settles.
func (m *Member) Done() <-chan struct{} { return m.done }

// Err is nil while the membership lasts, then why it ended.
func (m *Member) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Join returns a task that registers a member with id and data: an
// ephemeral node DIR/id. It succeeds once the node exists and belongs to
// the flow's session; the Member then keeps it registered (see Member)
// until Leave. A Join of an id another member holds, of another session
// or of this one (also one that has left, its delete under way), waits
// until that member's node goes, and one whose executor still runs the
// cleanup of an earlier failed Join of the id waits until that cleanup
// ends (PROTOCOL.md). See the package
// documentation for the protocol and errors. An invalid id fails with an
// error wrapping task.ErrInvalidPath.
func (g *Group) Join(id string, data []byte) task.Task[*Member] {
	if g == nil || g.dir == "" {
		return task.Fail[*Member](errNil("Group"))
	}
	if err := ValidateID(id); err != nil {
		return task.Fail[*Member](err)
	}
	return func(s *task.Scope, k task.Cont[*Member]) {
		sc := s.Child()
		path, sess := g.path(id), s.Session()
		// made: a create of this flow may have been applied. Only then
		// may the node at path be this flow's: another member of the
		// same id on this session (a Join retried from another
		// goroutine, say) is not deleted by this one's cleanup.
		made := false
		del := deleteIfOurs(path, sess)
		undo := sc.Defer(func(s *task.Scope, k task.Cont[task.Unit]) {
			if !made {
				k(task.Unit{}, nil)
				return
			}
			done := startCleanup(s.Runtime(), path)
			del(s, func(u task.Unit, err error) {
				if errors.Is(err, task.ErrNoAuth) {
					// Refused by an ACL, the delete goes on in the
					// background (zkops.KeepDeleting), and the cleanup
					// stays counted until the node is gone
					// (zkops.UntilAllowed, on the session's scope): the
					// next Join of the id would otherwise find this
					// node of its session, take it for its own after a
					// lost create reply, and lose it to that delete.
					task.Go(s.Runtime().SessionScope(), zkops.UntilAllowed(del), func(_ task.Unit, err error) {
						done()
						if err := endedOK(err); err != nil {
							s.Runtime().Report(err)
						}
					})
					k(u, err)
					return
				}
				done()
				k(u, err)
			})
		})
		// undo runs inside the scope, before RunIn closes it (and would
		// start the cleanup).
		late := canary.On(bugCleanupAfterJoin)
		var node task.Stat
		// A cleanup of an earlier failed Join of path on this runtime
		// would delete the node this one makes: it ends first.
		reg := c.Map(c.Then(afterCleanups(path), func(task.Unit) task.Task[task.Stat] {
			return register(path, data, g.acl, &made)
		}), func(st task.Stat) task.Unit {
			node = st
			if !late {
				undo()
			}
			return task.Unit{}
		})
		task.RunIn(sc, reg, func(_ task.Unit, err error) {
			if err != nil {
				k(nil, err)
				return
			}
			if late {
				undo()
			}
			m := &Member{g: g, id: id, data: slices.Clone(data), sess: sess, registered: true, done: make(chan struct{}), rt: s.Runtime(), keptOn: sess.ID}
			m.own(sess, node)
			m.start()
			k(m, nil)
		})
	}
}

// register creates path (ephemeral, with data) for the flow's session and
// succeeds with its Stat once the node is ours. *made says whether a
// create of this flow may have been applied: one is in flight, or one
// succeeded or had its reply lost. A lost create reply is settled by the node's
// ephemeralOwner; a node of another session, or one of this session that
// no create of this flow may have made (another member of the same id),
// is waited out (watched until it goes), then created again.
func register(path string, data []byte, acl task.ACLProvider, made *bool) task.Task[task.Stat] {
	return func(s *task.Scope, k task.Cont[task.Stat]) {
		r := &registering{s: s, k: k, path: path, data: data, acl: acl, made: made}
		r.create()
	}
}

// keeperRegister is register for a member's keeper: applied says whether
// a create of an earlier keeper of the member on this session may have
// made a node (its reply outstanding as it was canceled), and setMade
// hears whether a create of this run may have been applied, as register's
// made says. A node of the session that no create of the member's
// keepers may have made is another member's of the same id (a Join on
// this session since the member's node went): waited out, not taken.
func keeperRegister(path string, data []byte, acl task.ACLProvider, applied bool, setMade func(bool)) task.Task[task.Stat] {
	return func(s *task.Scope, k task.Cont[task.Stat]) {
		r := &registering{s: s, k: k, path: path, data: data, acl: acl, applied: applied || canary.On(bugKeeperTakesAnyNode), setMade: setMade}
		r.made = &r.ownMade
		r.create()
	}
}

// registering is one run of register's task.
type registering struct {
	s       *task.Scope
	k       task.Cont[task.Stat]
	path    string
	data    []byte
	acl     task.ACLProvider
	made    *bool
	ownMade bool       // made's target for a keeper's run
	applied bool       // a create of this flow may have been applied
	setMade func(bool) // a keeper's: told each change of *made
}

// setMadeTo sets *r.made, and tells a keeper.
func (r *registering) setMadeTo(v bool) {
	*r.made = v
	if r.setMade != nil {
		r.setMade(v)
	}
}

func (r *registering) create() {
	s, k, path, data, acl := r.s, r.k, r.path, r.data, r.acl
	req := &task.CreateRequest{Path: path, Data: data, Mode: task.Ephemeral, ACL: acl.For(path)}
	r.setMadeTo(true) // until its reply says otherwise: the flow may end first
	task.Run(s, task.CreateWith(req), func(cr task.Created, err error) {
		switch {
		case s.Err() != nil:
			// The flow ended with the create in flight (this
			// is the end's error, not a reply): it may apply.
		case err == nil, errors.Is(err, task.ErrConnectionLoss):
			r.applied = true
			r.setMadeTo(true)
		default:
			r.setMadeTo(r.applied)
		}
		switch {
		case err == nil:
			k(cr.Stat, nil)
		case errors.Is(err, task.ErrNoNode):
			task.Run(s, zkops.EnsurePath(task.Parent(path), acl), func(_ task.Unit, err error) {
				if err != nil {
					k(task.Stat{}, err)
					return
				}
				r.create()
			})
		case errors.Is(err, task.ErrNotSent):
			r.create()
		case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNodeExists):
			r.settle()
		default:
			k(task.Stat{}, err)
		}
	})
}

// settle looks at the node: ours (a create whose reply was lost),
// none (create again) or another session's (wait until it goes). It
// reads after a sync: after a lost reply the session may be back through
// a member that has not applied our create, where a read (a watched one
// too) shows an older incarnation of the node, of our session and gone
// since, and the Join would take that one for its own, leaving the node
// it made to no one (group/blocking seed 3227).
func (r *registering) settle() {
	s, k, path := r.s, r.k, r.path
	read := task.ExistsW(path)
	if !canary.On(bugSettleUnsynced) {
		read = zkops.AfterSync(path, read)
	}
	task.Run(s, c.Retry(read, retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			k(task.Stat{}, err)
		case sw.Stat == nil:
			r.create()
		case (sw.Stat.EphemeralOwner == s.Session().ID || canary.On(bugSettleAnyOwner)) && r.applied && !leaving(s, path, sw.Stat):
			// (A node a Leave on this runtime is deleting is a member's
			// that left, not one our create made: waited out below.)
			k(*sw.Stat, nil)
		case sw.Stat.EphemeralOwner != s.Session().ID && canary.On(bugSettleTakesOver):
			task.Run(s, c.Retry(task.Delete(path, task.AnyVersion), retry), func(_ task.Unit, err error) {
				if err != nil && !errors.Is(err, task.ErrNoNode) {
					k(task.Stat{}, err)
					return
				}
				r.create()
			})
		default:
			task.Run(s, sw.Watch.Wait(), func(_ task.Event, err error) {
				// A watch another user of the session took away
				// (RemoveWatches) is one more wake-up: look again.
				if err := wakeUp(err); err != nil {
					k(task.Stat{}, err)
					return
				}
				r.settle()
			})
		}
	})
}

// start follows the session and keeps the node. Executor goroutine.
func (m *Member) start() {
	m.unsub = m.rt.Subscribe(m.onSession)
	m.keep()
}

// keep starts the keeper flow on the current session: it watches the node
// and registers it again whenever it is gone.
func (m *Member) keep() {
	mon := m.rt.SessionScope().Child()
	m.keeper = mon
	path := m.Path()
	round := func(s *task.Scope, k task.Cont[bool]) {
		task.Run(s, c.Retry(task.ExistsW(path), retry), func(sw task.StatWatch, err error) {
			switch {
			case err != nil:
				k(false, err)
			case sw.Stat != nil && sw.Stat.EphemeralOwner == s.Session().ID && !leaving(s, path, sw.Stat) &&
				(sw.Stat.Czxid == m.node.Czxid || m.maybe == s.Session().ID || canary.On(bugKeeperTakesAnyNode)):
				// The member's node, or one a create of its keeper
				// may have made. (Another node of the session is
				// another member's of the id: register waits it out.)
				if m.keeper == mon {
					m.own(s.Session(), *sw.Stat)
				}
				m.mark(s.Session(), true)
				// A watch another user of the session took away
				// (RemoveWatches) is one more wake-up: the next round
				// reads the node again, and watches it again.
				task.Run(s, sw.Watch.Wait(), func(_ task.Event, err error) { k(true, wakeUp(err)) })
			default:
				m.mark(s.Session(), false)
				sess := s.Session().ID
				prior := m.maybe == sess // a create of an earlier keeper on sess may have made a node
				setMade := func(made bool) {
					// maybe names sess while a create of the member's
					// keepers on it may have made a node: until register
					// says which it made, or a reply says none.
					if m.keeper != mon {
						return
					}
					if made {
						m.maybe = sess
					} else if m.maybe == sess {
						m.maybe = 0
					}
				}
				task.Run(s, keeperRegister(path, m.data, m.g.acl, prior, setMade), func(st task.Stat, err error) {
					if err == nil && m.keeper == mon {
						m.own(s.Session(), st)
					}
					k(true, err)
				})
			}
		})
	}
	loop := c.Loop(true, func(b bool) bool { return b }, func(bool) task.Task[bool] { return round })
	m.rt.Schedule(func() {
		task.RunIn(mon, loop, func(_ bool, err error) {
			if m.keeper == mon {
				m.keeper = nil
			}
			switch {
			case errors.Is(err, task.ErrCanceled), errors.Is(err, task.ErrSessionExpired):
				// stopped by Leave, or the next session's keeper takes over
			case errors.Is(err, task.ErrClosed):
				m.end(task.ErrClosed)
			case err != nil:
				m.end(fmt.Errorf("group: member %s: %w", path, err))
			}
		})
	})
}

// own records st as the member's node, registered on session sess: the
// incarnation Leave deletes. A Stat that does not name its incarnation
// (no Czxid) leaves Leave to read which node of sess is the member's.
// Executor goroutine.
func (m *Member) own(sess task.Session, st task.Stat) {
	m.node, m.maybe = st, 0
	if st.Czxid == 0 {
		m.maybe = sess.ID
	}
}

// mark records whether the node is registered on session sess, and sess
// as the member's Session once it is.
func (m *Member) mark(sess task.Session, registered bool) {
	m.mu.Lock()
	if registered {
		m.sess = sess
	}
	m.registered = registered
	m.mu.Unlock()
}

func (m *Member) onSession(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	switch ev.State {
	case task.StateExpired:
		m.mu.Lock()
		m.registered = false
		m.mu.Unlock()
	case task.StateConnected:
		m.mu.Lock()
		same := ev.SessionID == m.keptOn
		if !same {
			m.registered = false
		}
		m.mu.Unlock()
		if same || canary.On(bugNoReregister) {
			return
		}
		if k := m.keeper; k != nil { // not yet ended by the expiry
			m.keeper = nil
			k.Cancel(task.ErrSessionExpired)
		}
		m.keptOn = ev.SessionID
		m.node, m.maybe = task.Stat{}, 0 // the old session's nodes went with it
		m.keep()
	case task.StateClosed:
		m.end(task.ErrClosed)
	}
}

// end ends the membership with err unless it already ended, and stops
// keeping the node. Executor goroutine.
func (m *Member) end(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
		close(m.done)
	}
	m.mu.Unlock()
	if m.unsub != nil {
		m.unsub()
		m.unsub = nil
	}
	if k := m.keeper; k != nil {
		m.keeper = nil
		k.Cancel(task.ErrCanceled)
	}
}

// Leave returns a task that ends the membership: it stops keeping the
// node and deletes it, retrying past connection loss. The node it deletes
// is the member's own incarnation, the one its Join or its keeper
// registered (named by its czxid), never another node at the same path:
// not a node of another session, and not that of a member that joined
// with the same id since, on this session or another. If the caller's
// scope ends first, the delete goes on as a flow of its own. Leave is
// idempotent: a Leave run again (after one that failed, or bound with
// defer to a member that has left) deletes that incarnation if it is
// still there and nothing else; a node already gone, or a session that
// ended (the node went with it), is success. Done is closed
// and Err becomes ErrLeft when the task starts, before the delete (unless
// the membership had ended before: Err keeps why). Run on another
// executor than the member's, Leave does nothing and fails with an error
// wrapping task.ErrInvalidArgument. Like any task, it does not start in a scope that has
// already ended (task.Run): to give it back whatever the outcome of the
// work in between, register it with Scope.Defer once taken (a cleanup
// runs as a flow of its own when the scope closes, ended or not).
func (m *Member) Leave() task.Task[task.Unit] {
	if m == nil || m.g == nil {
		return task.Fail[task.Unit](errNil("Member"))
	}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Runtime() != m.rt {
			k(task.Unit{}, errNotOurs)
			return
		}
		m.end(ErrLeft)
		sc := s.Child()
		del := m.deleteNode(s.Session())
		undo := sc.Defer(del)
		task.RunIn(sc, task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
			task.Run(s, del, func(v task.Unit, err error) {
				undo()
				k(v, err)
			})
		}), func(v task.Unit, err error) { k(v, endedOK(err)) })
	}
}

// deleteNode returns a task that deletes the member's node (m.node, the
// incarnation it registered: zkops.DeleteNode) if it belongs to session
// sess, retrying past connection loss. If the flow runs on another
// session than sess, sess has ended and its ephemerals went with it:
// nothing to do. When a create of the keeper may have made a node that
// m.node does not name (the keeper was stopped with its create in flight,
// or its reply lost), the task first reads the path: the keeper is
// stopped and a session's requests are applied in order, so a node of
// sess found then is the member's, and it becomes m.node, for this delete
// and any later Leave. The read follows a sync: the session may be back
// through a member that has not applied the lost create, where a plain
// read misses the node. Executor goroutine.
func (m *Member) deleteNode(sess task.Session) task.Task[task.Unit] {
	path := m.Path()
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		del := func() {
			if m.node.Czxid == 0 || m.node.EphemeralOwner != sess.ID {
				k(task.Unit{}, nil) // none registered on sess
				return
			}
			// Noted while it runs: a Join or keeper of the id on this
			// session whose create's reply is lost must not take this
			// node for the one it made (leavingNodes).
			n := leavingNode{sess.Epoch, path, m.node.Czxid}
			ls := leavingOf(s.Runtime())
			ls.add(n)
			task.Run(s, zkops.DeleteNode(path, m.node), func(u task.Unit, err error) {
				if err == nil {
					delete(ls, n) // gone, or the session ended
				}
				k(u, err)
			})
		}
		if m.maybe != sess.ID {
			del()
			return
		}
		task.Run(s, c.Retry(zkops.AfterSync(path, task.Exists(path)), retry), func(st *task.Stat, err error) {
			if err != nil {
				task.Run(s, zkops.GoneOK(err), k)
				return
			}
			if m.maybe == sess.ID { // not settled meanwhile by another Leave
				m.maybe = 0
				if st != nil && st.EphemeralOwner == sess.ID {
					m.node = *st
				}
			}
			del()
		})
	}
}

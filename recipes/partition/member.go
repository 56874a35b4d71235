package partition

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Member is one member of a partitioned set, from Join until Leave. It
// keeps its party node registered (again on each new session), follows
// the party, and once the party has been unchanged for Stable takes the
// items of its assignment and gives up the others. Its accessors are
// safe from any goroutine; its engine runs on the executor goroutine.
type Member struct {
	p  *Partitioner
	id string
	on func(Change)
	// idData is the data of its nodes (the identifier), made once: a
	// request's data is sent, never changed.
	idData []byte

	mu      sync.Mutex
	state   State
	held    map[string]Hold
	err     error
	done    chan struct{}
	session task.Session
	wake    chan struct{} // closed at the next report that changes anything; made on first ask (changes)

	// executor goroutine only
	rt      task.Runtime
	unsub   func()
	sess    task.Session
	sc      *task.Scope                   // flows of the current session
	party   string                        // our party node's name on sess ("" until made)
	names   []string                      // the latest party listing
	keyed   bool                          // ours and members hold what the assignment depends on
	ours    bool                          // our party node is in the latest listing
	members []string                      // the party's member ids in it, sorted
	listW   task.Task[task.ChildrenWatch] // the party listing, retried (a value: built once)
	gen     int                           // counts changes of ours and members, and sessions: a stale stability timer does nothing
	timer   task.Timer                    // the stability timer, if pending
	desired []string                      // the items of the assignment, sorted (nil: no assignment yet)
	holds   map[string]*hold
	tries   map[string]*task.Scope
	// attempts: the lock node each try in flight may have made (its
	// prefix drawn), until it is a hold or its clean-up has ended: a
	// give-up deletes them too, and the Leaves wait for that.
	attempts map[*task.Scope]attemptNode
	// giving: the lock nodes of holds given back (give) whose delete has
	// not ended in success, by path: one an ACL refused goes on in the
	// background (zkops.KeepDeleting). A give-up deletes them too, so a
	// Leave succeeds only once they are gone, and fails with the
	// refusal while one stays.
	giving   map[string]task.Session
	reported map[string]int64 // the token of each item the last report held
	idBuf    []string         // appendPartyMembers' buffer, reused while the members listed do not change
	redo     task.Timer       // a reconcile after a failed attempt
	// The give-up (Leave, or an end on an error while the session
	// lives): started once (its deletes again by a Leave after it
	// failed); the Leaves wait for it.
	leaving bool
	left    bool  // it has ended
	leftErr error // how
	// What it gives up, for a Leave to delete again after it failed.
	upHolds      []Hold
	upTries      []attemptNode
	upParty      string
	leaveWaiters []task.Cont[task.Unit]
}

type hold struct {
	Hold
	mon      *task.Scope // follows the node
	draining bool        // its WithDrain task runs: given up when it ends
}

// Session is the session the member's engine runs on now: its holds
// (Hold.Session) are of this session or gone.
func (m *Member) Session() task.Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.session
}

// changes returns the state, the holds when it is Acquired (read with
// it, under one lock: a report between two reads would pair Acquired with
// the holds of the allocation after it) and a channel closed at the next
// report.
func (m *Member) changes() (State, []Hold, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.wake == nil {
		m.wake = make(chan struct{})
	}
	var held []Hold
	if m.state == Acquired {
		held = sortedHolds(m.held)
	}
	return m.state, held, m.wake
}

// Identifier is the member's identifier.
func (m *Member) Identifier() string { return m.id }

// State is the member's state.
func (m *Member) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Held returns the items held, sorted by item.
func (m *Member) Held() []Hold {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedHolds(m.held)
}

// Hold returns the hold of item, if the member holds it.
func (m *Member) Hold(item string) (Hold, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[item]
	return h, ok
}

// Done is closed when the member ends; Err says why.
func (m *Member) Done() <-chan struct{} { return m.done }

// Err is nil while the member lasts: then ErrLeft after Leave,
// task.ErrClosed when its executor closed, or the error that ended it.
func (m *Member) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Fenced returns a task that applies ops behind the fence of the
// member's hold of item (Hold.Fenced); ErrNotHeld if it does not hold it.
func (m *Member) Fenced(item string, ops ...task.MultiOp) task.Task[[]task.MultiResult] {
	if m == nil || m.p == nil {
		return task.Fail[[]task.MultiResult](errNil("Member"))
	}
	return func(s *task.Scope, k task.Cont[[]task.MultiResult]) {
		h, ok := m.Hold(item)
		if !ok {
			k(nil, fmt.Errorf("partition: item %q: %w", item, ErrNotHeld))
			return
		}
		task.Run(s, h.Fenced(ops...), k)
	}
}

func sortedHolds(hs map[string]Hold) []Hold {
	if len(hs) == 0 {
		return nil
	}
	out := make([]Hold, 0, len(hs))
	for _, h := range hs {
		out = append(out, h)
	}
	slices.SortFunc(out, compareHolds)
	return out
}

func compareHolds(a, b Hold) int { return strings.Compare(a.Item, b.Item) }

// sortedKeys appends the keys of m to buf, sorted (a caller's buffer on
// its stack spares the allocation of small key sets).
func sortedKeys[V any](buf []string, m map[string]V) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

// Join returns a task that makes a member with identifier and starts it:
// it succeeds at once with the Member, whose engine then registers its
// party node (<32 hex digits>-<identifier>, ephemeral, under Path/party),
// follows the party and takes and gives up items; on reports each change
// (on the executor goroutine: it must not block; nil: no reports). Two
// members of one set must not share an identifier: kazoo's assignment
// would give both the same items (they would take turns: the locks
// decide). A bad identifier fails with an error wrapping
// task.ErrInvalidPath.
func (p *Partitioner) Join(identifier string, on func(Change)) task.Task[*Member] {
	if p == nil || p.cfg.Assign == nil {
		// A zero Partitioner (not made by New) has no path and no
		// division: its party node would go under the root.
		return task.Fail[*Member](fmt.Errorf("partition: nil or zero Partitioner: %w", task.ErrInvalidArgument))
	}
	if err := ValidateIdentifier(identifier); err != nil {
		return task.Fail[*Member](err)
	}
	return func(s *task.Scope, k task.Cont[*Member]) {
		m := &Member{p: p, id: identifier, idData: []byte(identifier), on: on, held: map[string]Hold{}, done: make(chan struct{}),
			holds: map[string]*hold{}, tries: map[string]*task.Scope{}, attempts: map[*task.Scope]attemptNode{}, giving: map[string]task.Session{}, reported: map[string]int64{}}
		m.rt = s.Runtime()
		m.unsub = m.rt.Subscribe(m.onSession)
		sess, _ := s.Current()
		m.begin(sess)
		k(m, nil)
	}
}

// begin starts the member's flows on session sess. Executor goroutine.
func (m *Member) begin(sess task.Session) {
	m.sess = sess
	m.mu.Lock()
	m.session = sess
	m.mu.Unlock()
	if m.sc != nil {
		m.sc.Cancel(task.ErrSessionExpired)
		m.sc.Close()
	}
	m.sc = m.rt.SessionScope().Child()
	m.party, m.names, m.keyed, m.ours, m.members, m.desired = "", nil, false, false, nil, nil
	m.gen++
	m.stopTimers()
	sc := m.sc
	m.rt.Schedule(func() { m.keepParty(sc) })
	m.rt.Schedule(func() { m.followParty(sc) })
}

func (m *Member) stopTimers() {
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if m.redo != nil {
		m.redo.Stop()
		m.redo = nil
	}
}

// current reports whether sc is the scope of the member's live session.
func (m *Member) current(sc *task.Scope) bool { return m.sc == sc && m.Err() == nil }

// fail ends the member with err if err is not the end of sc's session.
func (m *Member) fail(sc *task.Scope, what string, err error) {
	if !m.current(sc) || errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrCanceled) {
		return
	}
	if errors.Is(err, task.ErrClosed) {
		m.end(task.ErrClosed)
		return
	}
	m.end(fmt.Errorf("partition: %s %s: %w", m.p.cfg.Path, what, err))
}

// keepParty registers the party node on sc's session and registers it
// again (under a new name) whenever it is gone.
func (m *Member) keepParty(sc *task.Scope) {
	if !m.current(sc) {
		return
	}
	p := &partyKeeper{m: m, sc: sc, dir: m.p.partyDir(), acl: m.p.cfg.ACL}
	p.register()
}

// partyKeeper is keepParty on one session's scope. It registers one node
// at a time and follows it (watch) until it is gone: the node followed,
// its exists with a watch and the continuations are made once for every
// round.
type partyKeeper struct {
	m   *Member
	sc  *task.Scope
	dir string
	acl task.ACLProvider

	name     string                    // the node followed
	exists   task.Task[task.StatWatch] // its exists with a watch, retried
	onExists task.Cont[task.StatWatch]
	onFired  task.Cont[task.Event]
}

// register creates a party node under a new name.
func (p *partyKeeper) register() {
	m, sc, dir, acl := p.m, p.sc, p.dir, p.acl
	path, name := partyPath(sc, dir, m.id)
	req := &task.CreateRequest{Path: path, Data: m.idData, Mode: task.Ephemeral, ACL: acl.For(path)}
	sess := sc.Session()
	settle := func() task.Task[[]string] { return c.Map(zkops.Owned(dir, name, sess.ID), zkops.Names) }
	t := sc.Child()
	// Until it is the member's party node, or its clean-up has ended
	// (in success, or not refused), the node may be on the server
	// under a name the member does not know it has: a give-up deletes
	// it by prefix and owner, and the Leaves wait (one an ACL refused
	// fails them with the refusal).
	cleanup := cleanupAttempt(dir, name, sess)
	undo := t.Defer(func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, cleanup, func(v task.Unit, err error) {
			if !errors.Is(err, task.ErrNoAuth) || canary.On(bugLeaveLeavesRefused) {
				delete(m.attempts, t)
			}
			k(v, err)
		})
	})
	if !canary.On(bugLeaveLeavesPartyCreate) {
		m.attempts[t] = attemptNode{dir: dir, prefix: name, sess: sess}
	}
	reg := task.Task[string](func(s *task.Scope, k task.Cont[string]) {
		task.Run(s, zkops.CreateUnique(req, dir, acl, settle), func(n string, err error) {
			if err == nil && m.current(sc) {
				undo() // ours now: deleted by Leave or the session's end
				delete(m.attempts, t)
			}
			k(n, err)
		})
	})
	task.RunIn(t, reg, func(name string, err error) {
		if canary.On(bugLeaveLeavesPartyCreate) {
			delete(m.attempts, t)
		}
		if errors.Is(err, task.ErrNodeExists) && m.current(sc) {
			// Our create was applied, its reply lost, and the node
			// deleted and made again by someone else (an operator)
			// before we looked: not ours. Register under a new name.
			p.register()
			return
		}
		if err != nil {
			m.fail(sc, "party", err)
			return
		}
		if !m.current(sc) {
			return
		}
		m.party = name
		m.listed(sc, m.names)
		p.watch(name)
	})
}

// watch follows the party node name until it is gone (register again)
// or changed (watch again).
func (p *partyKeeper) watch(name string) {
	if p.exists == nil || name != p.name {
		p.name = name
		p.exists = c.Retry(task.ExistsW(p.dir+"/"+name), retry)
	}
	if p.onExists == nil {
		p.onExists, p.onFired = p.existed, p.fired
	}
	task.RunIn(p.sc.Child(), p.exists, p.onExists)
}

func (p *partyKeeper) existed(sw task.StatWatch, err error) {
	m, sc := p.m, p.sc
	switch {
	case err != nil:
		m.fail(sc, "party", err)
	case !m.current(sc):
	case sw.Stat == nil || sw.Stat.EphemeralOwner != sc.Session().ID:
		m.party = "" // deleted by someone else: register anew
		m.listed(sc, m.names)
		p.register()
	default:
		task.RunIn(sc.Child(), sw.Watch.Wait(), p.onFired)
	}
}

func (p *partyKeeper) fired(_ task.Event, err error) {
	// A watch another user of the session took away (RemoveWatches: a
	// cache of the node stopping) is one more wake-up: look again.
	if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
		p.m.fail(p.sc, "party", err)
		return
	}
	p.watch(p.name)
}

// followParty lists the party with a watch, again each time it fires.
func (m *Member) followParty(sc *task.Scope) {
	f := &partyFollow{m: m, sc: sc}
	f.onList, f.onFire = f.listed, f.fired
	f.next()
}

// partyFollow is followParty on one session's scope: its callbacks are
// made once, not at each listing, and so is its listing task (one
// listing runs at a time).
type partyFollow struct {
	m      *Member
	sc     *task.Scope
	onList task.Cont[task.ChildrenWatch] // listed
	onFire task.Cont[task.Event]         // fired

	list     task.Task[task.ChildrenWatch] // listRun
	onListed task.Cont[task.ChildrenWatch] // listedW
	ls       *task.Scope                   // the listing's scope and continuation
	lk       task.Cont[task.ChildrenWatch]
}

// next lists the party with a watch.
func (f *partyFollow) next() {
	m, sc := f.m, f.sc
	if !m.current(sc) {
		return
	}
	if m.listW == nil {
		m.listW = c.Retry(task.ChildrenW(m.p.partyDir()), retry)
	}
	if f.list == nil {
		f.list, f.onListed = f.listRun, f.listedW
	}
	task.RunIn(sc.Child(), f.list, f.onList)
}

// listRun is the party listing: the listing with a watch, made again
// once the directory is made if it is missing (c.OnError of it on
// task.ErrNoNode, with the handler's task c.Then(zkops.EnsurePath of
// the directory, the listing again)).
func (f *partyFollow) listRun(s *task.Scope, k task.Cont[task.ChildrenWatch]) {
	f.ls, f.lk = s, k
	task.Run(s, f.m.listW, f.onListed)
}

func (f *partyFollow) listedW(cw task.ChildrenWatch, err error) {
	s, k := f.ls, f.lk
	if err == nil || !errors.Is(err, task.ErrNoNode) {
		task.Resume(s, k, cw, err) // as the listing gave it, also in a scope that has ended
		return
	}
	m := f.m
	listW := m.listW
	task.Run(s, c.Then(zkops.EnsurePath(m.p.partyDir(), m.p.cfg.ACL), func(task.Unit) task.Task[task.ChildrenWatch] { return listW }), k)
}

func (f *partyFollow) listed(cw task.ChildrenWatch, err error) {
	m, sc := f.m, f.sc
	if err != nil {
		m.fail(sc, "party", err)
		return
	}
	if !m.current(sc) {
		return
	}
	m.listed(sc, cw.Names)
	task.RunIn(sc.Child(), cw.Watch.Wait(), f.onFire)
}

func (f *partyFollow) fired(_ task.Event, err error) {
	// A watch another user of the session took away (RemoveWatches: a
	// recursive cache of the party stopping) is one more wake-up: list
	// again.
	if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
		f.m.fail(f.sc, "party", err)
		return
	}
	f.next()
}

// listed takes a party listing: if what the assignment depends on (the
// members, and whether our node is among them) changed, the stability
// timer starts again.
func (m *Member) listed(sc *task.Scope, names []string) {
	m.names = names
	ours := m.party != "" && slices.Contains(names, m.party)
	var members []string
	if len(names) > 0 {
		if m.idBuf == nil {
			m.idBuf = make([]string, 0, len(names))
		}
		m.idBuf = appendPartyMembers(m.idBuf[:0], names)
		members = m.idBuf
	}
	if m.keyed && ours == m.ours && slices.Equal(members, m.members) && (m.timer != nil || m.desired != nil) {
		return
	}
	// The members listed before become the buffer: the only other
	// holder of that slice is the stability timer of the generation that
	// ends here, which no longer reads it.
	m.idBuf = m.members[:0:cap(m.members)]
	m.keyed, m.ours, m.members = true, ours, members
	m.gen++
	gen := m.gen
	if m.timer != nil {
		m.timer.Stop()
	}
	if canary.On(bugAllocatingBeforeTimer) {
		m.setState(Allocating)
	}
	m.timer = m.rt.AfterFunc(m.rt.Clock().Now().Add(m.p.cfg.Stable), func() {
		if gen != m.gen || !m.current(sc) {
			return
		}
		m.timer = nil
		m.desired = []string{}
		if ours {
			if m.p.kazoo {
				// Items of the set, in its order, each once: the
				// assignment as it is (a slice of its own).
				if assigned := KazooAssign(m.id, members, m.p.items); assigned != nil {
					m.desired = assigned
				}
			} else {
				m.desired = desiredOf(m.p.cfg.Assign(m.id, slices.Clone(members), slices.Clone(m.p.items)), m.p.items)
			}
		}
		m.reconcile()
	})
	// Allocating until the timer fires: report reads the pending timer
	// (asked before it is set, a member whose last timer had fired, its
	// old division all held, came out Acquired again).
	if !canary.On(bugAllocatingBeforeTimer) {
		m.setState(Allocating)
	}
}

// desiredOf returns the items of items (sorted) that assigned names, an
// Assign's answer, sorted and each once: an Assign that names an item not
// in the set is not followed there. assigned is left as it is (the
// Assign's own).
func desiredOf(assigned, items []string) []string {
	out := []string{}
	for _, it := range assigned {
		if _, ok := slices.BinarySearch(items, it); ok {
			out = append(out, it)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// wants reports whether item is in the member's assignment.
func (m *Member) wants(item string) bool {
	_, ok := slices.BinarySearch(m.desired, item)
	return ok
}

// bugAllocatingBeforeTimer: a new listing asks for Allocating before the
// new stability timer is set, so that a member whose last timer had
// fired, its old division all held, stays Acquired through Stable with
// the party changed, and goes from Acquired to Acquired with the items
// the new division moves (TestAllocatingOnceThePartyChanges).
const bugAllocatingBeforeTimer canary.Name = "partition/allocating-before-timer"

// reconcile gives up what the assignment moved elsewhere and takes what
// it gives this member. Executor goroutine.
func (m *Member) reconcile() {
	if m.Err() != nil || m.desired == nil {
		return
	}
	var buf [16]string
	for _, it := range sortedKeys(buf[:0], m.holds) {
		if !m.wants(it) {
			m.release(it)
		}
	}
	for _, it := range sortedKeys(buf[:0], m.tries) {
		if !m.wants(it) {
			t := m.tries[it]
			delete(m.tries, it)
			t.Cancel(task.ErrCanceled)
		}
	}
	for _, it := range m.desired { // (a slice never changed: a new assignment is a new one)
		if m.holds[it] == nil && m.tries[it] == nil {
			m.acquire(it)
		}
	}
	m.report()
}

// attemptNode is where a try's lock node may be: dir, its name's prefix,
// its session (cleanupAttempt).
type attemptNode struct {
	dir, prefix string
	sess        task.Session
}

// openAttempts returns the tries in flight's attemptNodes, in the order
// of their directories. Executor goroutine.
func (m *Member) openAttempts() []attemptNode {
	out := slices.Collect(maps.Values(m.attempts))
	slices.SortFunc(out, func(a, b attemptNode) int { return strings.Compare(a.dir+"/"+a.prefix, b.dir+"/"+b.prefix) })
	return out
}

// bugLeaveLeavesAttempt: a give-up deletes the lock nodes of the holds
// only, not those of the tries in flight (their own cleanups do, in the
// background): a Leave succeeded with its member's node still in an
// item's queue.
const bugLeaveLeavesAttempt canary.Name = "partition/leave-leaves-attempt"

// bugLeaveLeavesPartyCreate: a give-up deletes the party node the
// member knows (its create's reply in), not one whose create is in
// flight (its reply lost with the connection, say): a Leave succeeded
// with the member's party node on the server.
const bugLeaveLeavesPartyCreate canary.Name = "partition/leave-leaves-party-create"

// bugLeaveLeavesFailedTry: a try's node stops counting as soon as the
// try's outcome comes, its clean-up still to run in the background: a
// member that the try's error ends gives up its party node only, and a
// Leave after it succeeded with the try's lock node on the server.
const bugLeaveLeavesFailedTry canary.Name = "partition/leave-leaves-failed-try"

// acquire starts taking item's lock on the current session.
func (m *Member) acquire(item string) {
	sc := m.sc
	dir := m.p.ItemDir(item)
	t := sc.Child()
	m.tries[item] = t
	sess := m.sess
	m.rt.Schedule(func() {
		prefix := hexID(t)
		// The try's node counts (m.attempts) until it is a hold or its
		// clean-up has ended, in success or not refused: a give-up that
		// comes meanwhile (a Leave, an end on an error, this try's own
		// included) deletes it too, and one an ACL refused (it goes on in
		// the background) fails the Leave with the refusal.
		cleanup := cleanupAttempt(dir, prefix, sess)
		undo := t.Defer(func(s *task.Scope, k task.Cont[task.Unit]) {
			task.Run(s, cleanup, func(v task.Unit, err error) {
				if !errors.Is(err, task.ErrNoAuth) || canary.On(bugLeaveLeavesRefused) {
					delete(m.attempts, t)
				}
				k(v, err)
			})
		})
		if t.Err() == nil && !canary.On(bugLeaveLeavesAttempt) {
			m.attempts[t] = attemptNode{dir: dir, prefix: prefix, sess: sess}
		}
		take := task.Task[lockNode](func(s *task.Scope, k task.Cont[lockNode]) {
			task.Run(s, lockItem(dir, prefix, m.idData, m.p.cfg.ACL), func(n lockNode, err error) {
				if err == nil && m.tries[item] == t && m.current(sc) {
					undo() // ours now: released by release or the session's end
					delete(m.attempts, t)
				}
				k(n, err)
			})
		})
		task.RunIn(t, take, func(n lockNode, err error) {
			if canary.On(bugLeaveLeavesFailedTry) {
				delete(m.attempts, t)
			}
			if m.tries[item] != t || !m.current(sc) {
				return // withdrawn (the cleanup deletes the node), or stale
			}
			delete(m.tries, item)
			if err != nil {
				if !errors.Is(err, ErrLost) && !task.IsRetryable(err) {
					m.fail(sc, "item "+item, err)
					return
				}
				m.later() // taken again at the next reconcile
				return
			}
			h := &hold{Hold: Hold{Item: item, Token: n.stat.Czxid, Path: n.path, Version: n.stat.Version, Session: sess, life: &holdLife{m: m, item: item, path: n.path}}, mon: sc.Child()}
			m.holds[item] = h
			m.follow(sc, h)
			m.reconcile()
		})
	})
}

// later runs reconcile after a pause (an attempt that failed).
func (m *Member) later() {
	if m.redo != nil {
		return
	}
	m.redo = m.rt.AfterFunc(m.rt.Clock().Now().Add(m.p.cfg.Stable), func() {
		m.redo = nil
		m.reconcile()
	})
}

// follow watches a hold's node: deleted or changed by someone else, the
// hold is lost (and the node, if still ours, deleted).
func (m *Member) follow(sc *task.Scope, h *hold) {
	m.rt.Schedule(func() {
		task.RunIn(h.mon, zkops.WatchNode(h.Path, h.Version, nil), func(_ task.Unit, err error) {
			if m.holds[h.Item] != h || !m.current(sc) || errors.Is(err, task.ErrCanceled) {
				return
			}
			if errors.Is(err, task.ErrClosed) || errors.Is(err, task.ErrSessionExpired) {
				return // the session's end takes every hold (onSession)
			}
			// Deleted, or written by someone else: the hold ends, and a
			// node still there and ours is deleted, or it would stay the
			// lowest contender and the next attempt would wait behind it.
			m.give(h)
			m.later()
			m.report()
		})
	})
}

// lostByFence ends the member's hold whose life is l, if it still holds
// it: a fenced write's check was refused, so the hold has ended, as
// follow ends one whose node was deleted or written (the node deleted;
// the item tried again after Stable if it is still in the share).
// Executor goroutine.
func (m *Member) lostByFence(l *holdLife) {
	h := m.holds[l.item]
	if h == nil || h.life != l || m.Err() != nil {
		return
	}
	m.give(h)
	m.later()
	m.report()
}

// report updates the accessors and calls on if anything changed.
func (m *Member) report() {
	st := Allocating
	switch {
	case m.Err() != nil:
		st = Ended
	case m.timer == nil && m.desired != nil && len(m.tries) == 0 && heldIsDesired(m.holds, m.desired) && !m.draining():
		st = Acquired
	}
	// An item held under another token than the last report's was given
	// up and taken again: both.
	var acq, rel []string
	for it, h := range m.holds {
		if tok, ok := m.reported[it]; !ok || tok != h.Token {
			acq = append(acq, it)
		}
	}
	for it, tok := range m.reported {
		if h, ok := m.holds[it]; !ok || h.Token != tok {
			rel = append(rel, it)
		}
	}
	m.mu.Lock()
	changed := st != m.state || len(acq) > 0 || len(rel) > 0
	m.state = st
	// m.held becomes a copy of the holds: the accessors read it under mu.
	for it := range m.held {
		if _, ok := m.holds[it]; !ok {
			delete(m.held, it)
		}
	}
	for it, h := range m.holds {
		m.held[it] = h.Hold
	}
	if changed && m.wake != nil {
		close(m.wake)
		m.wake = nil
	}
	m.mu.Unlock()
	if !changed {
		return
	}
	clear(m.reported)
	for it, h := range m.holds {
		m.reported[it] = h.Token
	}
	slices.Sort(acq)
	slices.Sort(rel)
	if m.on != nil {
		m.on(Change{State: st, Held: m.sortedHolds(), Acquired: acq, Released: rel})
	}
}

// sortedHolds returns the holds, sorted by item (nil if none).
func (m *Member) sortedHolds() []Hold {
	if len(m.holds) == 0 {
		return nil
	}
	out := make([]Hold, 0, len(m.holds))
	for _, h := range m.holds {
		out = append(out, h.Hold)
	}
	slices.SortFunc(out, compareHolds)
	return out
}

// heldIsDesired reports whether the items held are exactly those of the
// assignment: an item still draining (held, not assigned) or one not
// taken again yet (assigned, not held) keeps the member Allocating.
// draining reports whether a hold's WithDrain task runs: the item is
// being given up (it is, once the drain ends, even if the division wants
// it here again: the member then takes it anew), so the member is not
// Acquired.
func (m *Member) draining() bool {
	if canary.On(bugAcquiredWhileDraining) {
		return false
	}
	for _, h := range m.holds {
		if h.draining {
			return true
		}
	}
	return false
}

func heldIsDesired(now map[string]*hold, desired []string) bool {
	if len(now) != len(desired) {
		return false
	}
	for it := range now {
		if _, ok := slices.BinarySearch(desired, it); !ok {
			return false
		}
	}
	return true
}

func (m *Member) setState(st State) {
	m.mu.Lock()
	same := m.state == st
	m.mu.Unlock()
	if !same {
		m.report()
	}
}

// dropAll forgets every hold and attempt (their session ended, or the
// member ends): the holds end. Executor goroutine.
func (m *Member) dropAll() {
	var buf [16]string
	for _, it := range sortedKeys(buf[:0], m.holds) {
		h := m.holds[it]
		h.end()
		delete(m.holds, it)
		h.mon.Cancel(task.ErrCanceled)
		h.mon.Close()
	}
	for _, it := range sortedKeys(buf[:0], m.tries) {
		t := m.tries[it]
		delete(m.tries, it)
		t.Cancel(task.ErrCanceled)
	}
	m.desired = nil
	m.stopTimers()
	if canary.On(bugDropForgetsReported) {
		clear(m.reported)
	}
}

// bugKeepAcrossExpiry: holds are kept across a session's end, as if
// the lock nodes had not gone with it.
const bugKeepAcrossExpiry canary.Name = "partition/keep-holds-across-expiry"

// bugDropForgetsReported: dropping every hold (a session's end) forgets
// what the last report said was held, so the report after it lists
// nothing as Released.
const bugDropForgetsReported canary.Name = "partition/drop-forgets-reported"

// bugAcquiredWhileDraining: a hold whose WithDrain task runs counts as
// held for state Acquired, so an item the division moved here again while
// it drained is reported Acquired, then given up all the same.
const bugAcquiredWhileDraining canary.Name = "partition/acquired-while-draining"

func (m *Member) onSession(ev task.Event) {
	if ev.Type != task.EventNone || m.Err() != nil {
		return
	}
	if canary.On(bugKeepAcrossExpiry) && (ev.State == task.StateExpired || ev.State == task.StateConnected && ev.SessionID != m.sess.ID) {
		for _, it := range slices.Sorted(maps.Keys(m.tries)) {
			t := m.tries[it]
			delete(m.tries, it)
			t.Cancel(task.ErrCanceled)
		}
		if ev.State == task.StateConnected {
			sess, _ := m.rt.Current()
			desired := m.desired
			m.begin(sess)
			m.desired = desired
		}
		return
	}
	switch ev.State {
	case task.StateExpired:
		m.dropAll()
		m.report()
	case task.StateConnected:
		if ev.SessionID == m.sess.ID {
			return
		}
		m.dropAll()
		sess, _ := m.rt.Current()
		m.begin(sess)
		m.report()
	case task.StateClosed:
		m.end(task.ErrClosed)
	}
}

// end ends the member with err unless it already ended: every hold is
// dropped. Leave deletes the nodes; so does an end on an error while the
// session lives (its nodes would keep the items from everyone until the
// session ends); the session's end takes them otherwise.
func (m *Member) end(err error) {
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = err
	close(m.done)
	m.mu.Unlock()
	if !errors.Is(err, ErrLeft) && !errors.Is(err, task.ErrClosed) && !errors.Is(err, task.ErrSessionExpired) && m.rt != nil && !m.leaving {
		holds, party := m.nodes()
		m.giveUp(holds, m.openAttempts(), party, nil)
	}
	if m.unsub != nil {
		m.unsub()
		m.unsub = nil
	}
	m.dropAll()
	if m.sc != nil {
		m.sc.Cancel(task.ErrCanceled)
		m.sc.Close()
	}
	m.report()
}

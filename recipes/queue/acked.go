package queue

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// consumer is an at-least-once consumer: a unique id (32 hex digits)
// and its marker CONSUMERS/<id> (ephemeral, of sess). Its in-flight
// items are INFLIGHT/<id>-<name>: one flat directory, so that one listing
// shows which consumers hold items.
type consumer struct {
	id     string
	sess   task.Session
	czxid  int64  // the marker's incarnation
	marker string // its path
}

const idLen = 32

func (q *Queue) marker(id string) string { return q.consumers + "/" + id }

// flight is the path of consumer id's in-flight copy of the item named
// name whose incarnation is czxid: INFLIGHT/<id>-<czxid, 16 hex>-<name>.
// The czxid ties the copy to the item it copies, not only to its name,
// which the counter can hand out again.
func (q *Queue) flight(id string, czxid int64, name string) string {
	var b strings.Builder
	b.Grow(len(q.inflight) + len(id) + len(name) + 19)
	b.WriteString(q.inflight)
	b.WriteByte('/')
	b.WriteString(id)
	b.WriteByte('-')
	var hex [16]byte
	for i, v := len(hex)-1, uint64(czxid); i >= 0; i, v = i-1, v>>4 {
		hex[i] = "0123456789abcdef"[v&15]
	}
	b.Write(hex[:])
	b.WriteByte('-')
	b.WriteString(name)
	return b.String()
}

// splitFlight parses an in-flight entry's name into the consumer's id and
// the item's name: "<id>-<czxid>-<name>", or "<id>-<name>" as copies were
// named before they carried the item's czxid (returned all the same).
func splitFlight(entry string) (id, name string, ok bool) {
	if len(entry) < idLen+2 || entry[idLen] != '-' {
		return "", "", false
	}
	id, rest := entry[:idLen], entry[idLen+1:]
	const zx = 16
	if len(rest) > zx+1 && rest[zx] == '-' && isHex(rest[:zx]) {
		rest = rest[zx+1:]
	}
	return id, rest, true
}

// splitFlightZ is splitFlight with the czxid of the item copied, when
// the copy's name has it (ok false for a copy named before copies carried
// it).
func splitFlightZ(entry string) (id, name string, czxid int64, ok bool) {
	id, name, fine := splitFlight(entry)
	if !fine || len(entry) < idLen+18 || entry[idLen+17] != '-' {
		return id, name, 0, false
	}
	z, err := strconv.ParseUint(entry[idLen+1:idLen+17], 16, 64)
	if err != nil {
		return id, name, 0, false
	}
	return id, name, int64(z), true
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// multiIndex returns the index of the failed op of a multi's error, or -1.
func multiIndex(err error) int {
	if err == nil {
		return -1
	}
	if me, ok := zkops.AsMultiError(err); ok {
		return me.Index
	}
	return -1
}

// isClaimed reports whether a take of this Queue has delivered the
// in-flight copy at copyPath (and it is not acknowledged).
func (q *Queue) isClaimed(copyPath string) bool {
	_, ok := q.claimed[copyPath]
	return ok
}

// newConsumer makes cn the queue's consumer. The claims of takes on other
// (ended) sessions go: their copies are returned by the others. Those of
// this session stay, also those of an earlier consumer of it (its marker
// deleted by hand), whose takes may still be settling a lost reply.
func (q *Queue) newConsumer(cn *consumer) {
	q.cons = cn
	for p, sess := range q.claimed {
		if sess != cn.sess.ID || canary.On(bugOneRegistration) {
			delete(q.claimed, p)
		}
	}
}

// registration is a consumer's registration under way: the takes of its
// session that need a consumer wait for it rather than register another
// (two consumers of one Queue and session, one of them unknown to it).
type registration struct {
	sess    task.Session
	waiters []*task.Cont[*consumer]
}

// errRegisterAgain wakes the takes waiting for a registration that ended
// without a consumer (its take was canceled, or it failed): each tries
// again itself.
var errRegisterAgain = errors.New("queue: register again")

// registered returns a task that succeeds with the queue's consumer for
// the scope's session, registering a new one if there is none (or it
// belongs to an ended session, or its marker was found gone): one create
// of its ephemeral marker, then a return pass (recover). One registration
// runs at a time per session: the other takes wait for it.
func (q *Queue) registered() task.Task[*consumer] {
	if q.registeredT != nil {
		return q.registeredT
	}
	return q.buildRegistered()
}

// buildRegistered builds registered's task.
func (q *Queue) buildRegistered() task.Task[*consumer] {
	return func(s *task.Scope, k task.Cont[*consumer]) {
		sess := s.Session()
		if cn := q.cons; cn != nil && cn.sess.ID == sess.ID && cn.sess.Epoch == sess.Epoch {
			k(cn, nil)
			return
		}
		q.register(s, k, sess)
	}
}

// register is registered's task when the session has no consumer: it
// waits for the registration under way, or registers one.
func (q *Queue) register(s *task.Scope, k task.Cont[*consumer], sess task.Session) {
	if r := q.registering; r != nil && r.sess.ID == sess.ID && r.sess.Epoch == sess.Epoch && !canary.On(bugOneRegistration) {
		again := func(cn *consumer, err error) {
			if errors.Is(err, errRegisterAgain) {
				q.registered()(s, k)
				return
			}
			k(cn, err)
		}
		task.Suspend(s, again, func(resume task.Cont[*consumer]) func() {
			w := &resume
			r.waiters = append(r.waiters, w)
			return func() { // abandoned: this take's scope ended
				if i := slices.Index(r.waiters, w); i >= 0 {
					r.waiters = slices.Delete(r.waiters, i, i+1)
				}
			}
		})
		return
	}
	reg := &registration{sess: sess}
	q.registering = reg
	finished := false
	finish := func(cn *consumer, err error) {
		if finished {
			return
		}
		finished = true
		if q.registering == reg {
			q.registering = nil
		}
		werr := err
		if cn == nil {
			werr = errRegisterAgain
		}
		for _, w := range reg.waiters {
			(*w)(cn, werr)
		}
		reg.waiters = nil
	}
	s.OnDone(func(error) { finish(nil, errRegisterAgain) })
	k0 := k
	k = func(cn *consumer, err error) {
		finish(cn, err)
		k0(cn, err)
	}
	var attempt func()
	var send func(id string)
	attempt = func() {
		// The session's id makes the id unique to this session: a
		// process restarted with the same identity (the same executor
		// seed, so the same draws) is on another session.
		send(fmt.Sprintf("%016x%016x", uint64(sess.ID), s.Rand()))
	}
	send = func(id string) {
		marker := q.marker(id)
		req := &task.CreateRequest{Path: marker, Mode: task.Ephemeral, ACL: q.acl.For(marker)}
		// A flow of its own, not ended with the take: a take that ends
		// (canceled, past its deadline) with the create in flight
		// deletes the marker it may have made, which no consumer of
		// the Queue uses (one registration per session).
		task.Go(s, task.CreateWith(req), func(cr task.Created, err error) {
			if s.Err() != nil {
				if err == nil || errors.Is(err, task.ErrConnectionLoss) {
					task.Go(s, zkops.DeleteMine(marker), func(task.Unit, error) {})
				}
				return
			}
			switch {
			case err == nil:
				cn := &consumer{id: id, sess: sess, czxid: cr.Stat.Czxid, marker: marker}
				q.newConsumer(cn)
				// Items of dead consumers go back before this one
				// takes (its errors are the take's next request's).
				task.Run(s, q.recover(cn, false), func([]*task.Watch, error) { k(cn, nil) })
			case errors.Is(err, task.ErrNodeExists):
				attempt() // the id is taken (a restarted process drew it again)
			case errors.Is(err, task.ErrNoNode):
				ensure := c.Seq(zkops.EnsurePath(q.inflight, q.acl), zkops.EnsurePath(q.consumers, q.acl))
				task.Run(s, ensure, func(_ task.Unit, err error) {
					if err != nil {
						k(nil, err)
						return
					}
					send(id)
				})
			case errors.Is(err, task.ErrNotSent):
				send(id)
			case errors.Is(err, task.ErrConnectionLoss):
				// Applied or not: our marker, owned by our session, says.
				task.Run(s, c.Retry(zkops.AfterSync(marker, task.Exists(marker)), zkops.Retry), func(st *task.Stat, err error) {
					switch {
					case err != nil:
						k(nil, err)
					case st != nil && st.EphemeralOwner == sess.ID:
						cn := &consumer{id: id, sess: sess, czxid: st.Czxid, marker: marker}
						q.newConsumer(cn)
						// Registered: the return pass, as above.
						task.Run(s, q.recover(cn, false), func([]*task.Watch, error) { k(cn, nil) })
					default:
						attempt()
					}
				})
			default:
				k(nil, err)
			}
		})
	}
	attempt()
}

// takeAcked is the at-least-once take: for each item in order, read it
// and move it with one multi: check our marker, create the in-flight copy
// INFLIGHT/<id>/<name> with the item's data, delete the item at the
// version read. When the queue is empty, return dead consumers' items
// first, then wait on the directory's children watch and on the markers
// of the live consumers that have in-flight directories (their death
// returns items).
func (q *Queue) takeAcked() task.Task[*Item] {
	return func(s *task.Scope, k task.Cont[*Item]) {
		t := &takingAcked{q: q, s: s, k: k}
		t.round(false)
	}
}

// takingAcked is one run of takeAcked's task. As takingDelete's, its
// steps run one at a time: the step under way keeps its state here, and
// each continuation is made once for all the take's rounds.
type takingAcked struct {
	q  *Queue
	s  *task.Scope
	k  task.Cont[*Item]
	ls listing

	empty bool          // the round found the queue empty
	cn    *consumer     // the round's consumer
	ws    []*task.Watch // recover's watches, to sleep on
	its   []Item        // the round's items (its buffer, the next round's)
	i     int           // the item tried
	epoch int32         // the epoch, read before the item
	path  string        // the item tried's path
	it    *Item         // the item whose move runs (detached)

	onRegistered task.Cont[*consumer]
	onList       task.Cont[task.ChildrenWatch]
	onRecovered  task.Cont[[]*task.Watch]
	onWatchList  task.Cont[task.ChildrenWatch]
	onSlept      task.Cont[task.Unit]
	onEpoch      task.Cont[int32]
	onGot        task.Cont[task.Data]
	onMoved      func(outcome, error)
	onOrphan     func(outcome, error)
}

func (t *takingAcked) round(empty bool) {
	t.empty = empty
	if t.onRegistered == nil {
		t.onRegistered = t.registered
	}
	task.Run(t.s, t.q.registered(), t.onRegistered)
}

func (t *takingAcked) registered(cn *consumer, err error) {
	q, s := t.q, t.s
	if err != nil {
		t.k(nil, err)
		return
	}
	t.cn = cn
	if !t.empty {
		if t.onList == nil {
			t.onList = t.listed
		}
		task.Run(s, t.ls.of(q, false), t.onList)
		return
	}
	// Empty: return the items of dead consumers, then list with
	// a watch and wait.
	if t.onRecovered == nil {
		t.onRecovered = t.recovered
	}
	task.Run(s, q.recover(cn, true), t.onRecovered)
}

func (t *takingAcked) listed(cw task.ChildrenWatch, err error) {
	if err != nil {
		t.k(nil, err)
		return
	}
	// The last round's items are done with: their buffer serves
	// (an item taken is a copy, see got).
	if t.its = ordered(t.its[:0], cw.Names); len(t.its) > 0 {
		t.try(0)
		return
	}
	t.round(true)
}

func (t *takingAcked) recovered(ws []*task.Watch, err error) {
	if err != nil {
		t.k(nil, err)
		return
	}
	t.ws = ws
	if t.onWatchList == nil {
		t.onWatchList = t.watchListed
	}
	task.Run(t.s, t.ls.of(t.q, true), t.onWatchList)
}

func (t *takingAcked) watchListed(cw task.ChildrenWatch, err error) {
	q, s := t.q, t.s
	if err != nil {
		t.k(nil, err)
		return
	}
	if t.its = ordered(t.its[:0], cw.Names); len(t.its) > 0 {
		t.try(0)
		return
	}
	q.follow(s, cw.Watch)
	if t.onSlept == nil {
		t.onSlept = t.slept
	}
	task.Run(s, q.sleep(append(t.ws, cw.Watch)), t.onSlept)
}

func (t *takingAcked) slept(_ task.Unit, err error) {
	if err != nil {
		t.k(nil, err)
		return
	}
	t.round(false)
}

// try reads item i of the round, after the epoch (see epoch.go), and
// moves it (got); past the last item, the next round.
func (t *takingAcked) try(i int) {
	if i == len(t.its) {
		t.round(false)
		return
	}
	t.i = i
	if t.onEpoch == nil {
		t.onEpoch = t.epochRead
	}
	task.Run(t.s, t.q.epochVersion(), t.onEpoch)
}

func (t *takingAcked) epochRead(epoch int32, err error) {
	if err != nil {
		t.k(nil, err)
		return
	}
	t.epoch = epoch
	if t.onGot == nil {
		t.onGot = t.got
	}
	t.path = t.q.item(t.its[t.i].Name)
	task.Run(t.s, c.Retry(task.Get(t.path), zkops.Retry), t.onGot)
}

func (t *takingAcked) got(d task.Data, err error) {
	q, s, cn := t.q, t.s, t.cn
	switch {
	case errors.Is(err, task.ErrNoNode):
		t.try(t.i + 1)
	case err != nil:
		t.k(nil, err)
	default:
		it := new(Item) // the item taken, if it is: its own copy
		*it = t.its[t.i]
		it.Data, it.czxid, it.q, it.cons = d.Data, d.Stat.Czxid, q, cn
		t.it = it
		if t.onMoved == nil {
			t.onMoved, t.onOrphan = t.moved, t.orphan
		}
		detached(q, s, q.move(cn, it, t.path, d.Stat.Version, t.epoch), t.onMoved, t.onOrphan)
	}
}

func (t *takingAcked) moved(r outcome, err error) {
	switch {
	case err != nil:
		t.k(nil, err)
	case r == taken:
		t.k(t.it, nil)
	case r == stale, t.q.cons != t.cn:
		t.round(false) // the directory created again, or our marker gone
	default:
		t.try(t.i + 1)
	}
}

// orphan is the outcome of the move of t.it once the take has ended.
func (t *takingAcked) orphan(r outcome, err error) {
	if r == taken && err == nil {
		t.q.giveBackOwn(t.s, t.cn, *t.it) // moved as the take ended
	}
}

// move moves item it (at path, read at version, with the directory's
// epoch at version epoch) in flight under cn: one multi checks cn's marker
// and the epoch, creates the copy and deletes the item at the version
// read. The outcome is gone when the item was gone (another consumer took
// it) or cn is no longer registered (its marker gone: q.cons is reset, so
// the caller registers a new consumer), and stale when the epoch moved.
func (q *Queue) move(cn *consumer, it *Item, path string, version, epoch int32) task.Task[outcome] {
	return func(s *task.Scope, k task.Cont[outcome]) {
		copyPath := q.flight(cn.id, it.czxid, it.Name)
		m := &moving{q: q, s: s, k: k, cn: cn, copyPath: copyPath, opCopy: 2, epoch: epoch}
		m.marker = task.CheckRequest{Path: cn.marker, Version: 0}
		m.epochCheck = task.CheckRequest{Path: q.epochPath(), Version: epoch}
		m.copy = task.CreateRequest{Path: copyPath, Data: it.Data, Mode: task.Persistent, ACL: q.acl.For(copyPath)}
		m.del = task.DeleteRequest{Path: path, Version: version}
		m.buf = [4]task.MultiOp{&m.marker, &m.epochCheck, &m.copy, &m.del}
		m.ops = m.buf[:]
		if canary.On(bugTakeByDelete) {
			m.buf[2] = &m.del
			m.ops, m.opCopy = m.buf[:3], -1
		}
		m.send()
	}
}

// moving is one run of move's task.
type moving struct {
	q        *Queue
	s        *task.Scope
	k        task.Cont[outcome]
	cn       *consumer
	copyPath string
	ops      []task.MultiOp // sent again as they are (send)
	opCopy   int
	epoch    int32
	// The ops, in one allocation with the run.
	buf                [4]task.MultiOp
	marker, epochCheck task.CheckRequest
	copy               task.CreateRequest
	del                task.DeleteRequest
}

func (m *moving) claim() {
	q, s, k, copyPath := m.q, m.s, m.k, m.copyPath
	if q.claimed == nil {
		q.claimed = map[string]int64{}
	}
	q.claimed[copyPath] = s.Session().ID
	k(taken, nil)
}

func (m *moving) send() {
	const opMarker, opEpoch = 0, 1
	q, s, k, cn, ops, opCopy, epoch := m.q, m.s, m.k, m.cn, m.ops, m.opCopy, m.epoch
	task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
		switch i := multiIndex(err); {
		case err == nil:
			m.claim()
		case errors.Is(err, task.ErrConnectionLoss):
			if opCopy < 0 || canary.On(bugClaimless) {
				m.send()
				return
			}
			m.settle()
		case errors.Is(err, task.ErrNotSent):
			m.send()
		case i == opMarker && (errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrBadVersion)):
			if q.cons == cn {
				q.cons = nil
			}
			k(gone, nil)
		case i == opEpoch && (errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrBadVersion)):
			q.staleEpoch(epoch)
			if errors.Is(err, task.ErrNoNode) {
				task.Run(s, zkops.EnsurePath(q.epochPath(), q.acl), func(_ task.Unit, err error) { k(stale, err) })
				return
			}
			k(stale, nil)
		case i == opCopy && errors.Is(err, task.ErrNoNode):
			// The in-flight directory is missing (first use, or
			// deleted by hand).
			task.Run(s, zkops.EnsurePath(q.inflight, q.acl), func(_ task.Unit, err error) {
				if err != nil {
					k(gone, err)
					return
				}
				m.send()
			})
		case i == opCopy && errors.Is(err, task.ErrNodeExists):
			// Our copy of this incarnation exists, made by another
			// take of this Queue (the same consumer): not ours.
			if canary.On(bugClaimless) {
				m.claim()
				return
			}
			k(gone, nil)
		case errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrBadVersion):
			k(gone, nil) // the item: taken by someone else
		default:
			k(gone, err)
		}
	})
}

// settle: a lost reply is settled by the copy, not by sending
// again (a second send can fail on a check whatever the first
// did). The copy is made only with this incarnation's delete, in
// one multi, and nobody else touches a live consumer's copies: if
// it exists the move was applied, by this take unless another
// take of this Queue (the same consumer) has delivered it.
func (m *moving) settle() {
	q, s, k, copyPath := m.q, m.s, m.k, m.copyPath
	task.Run(s, c.Retry(zkops.AfterSync(copyPath, task.Exists(copyPath)), zkops.Retry), func(st *task.Stat, err error) {
		switch {
		case err != nil:
			k(gone, err)
		case q.isClaimed(copyPath):
			// Another take of this Queue has this incarnation, whether
			// its copy is still there or was given back or acknowledged
			// since: not ours, and not to be moved again (a give-back
			// returns it under its own name at version 0, and the move
			// sent again would take that new incarnation on this stale
			// read, in a copy of the given-back one's name).
			k(gone, nil)
		case st == nil:
			m.send() // not applied
		default:
			m.claim()
		}
	})
}

// Ack returns a task that acknowledges an item taken in at-least-once
// mode: one multi checks the consumer's marker and deletes the in-flight
// copy. It must run on the session the item was taken on. Its outcome
// says what is known:
//
//   - nil: applied, once. The item will never be delivered again. An
//     Ack of an Item whose ack was applied already (by an earlier Ack,
//     or one running at the same time, on this executor) says so too:
//     nil.
//   - ErrDeliveryLost: not applied, and the item is no longer this
//     consumer's (and no other Ack of this Item may have been applied:
//     see ErrOutcomeUnknown): the session ended before the ack was sent, or the
//     consumer's marker was deleted (the item is, or will be, back in the
//     queue), or the copy itself was gone (returned to the queue after
//     the marker went and came back, or deleted by hand, which loses it).
//   - ErrOutcomeUnknown: the multi was sent and may have been applied:
//     the session ended, or the executor was closed, with its reply lost
//     (the error then wraps task.ErrClosed too), or another Ack of this Item
//     (still running, or ended so) may have been applied where this one
//     would say ErrDeliveryLost, or its reply was lost and
//     the copy is gone while the marker is not the consumer's any more
//     (applied, or not applied and the item went back to the queue).
//   - task.ErrNoAuth: not applied, refused by an ACL (an operator closed
//     the consumer's marker or made the in-flight directory read only),
//     and the item is still this consumer's: the ack goes on in the
//     background until the ACL lets it (every twice the session timeout)
//     or the session ends. A failure there goes to the executor's
//     Config.OnError.
//   - task.ErrClosed, without ErrOutcomeUnknown: the executor was closed
//     before the ack was sent (refused at once): not applied, the item
//     goes back to the queue once the closed session has gone. An ack
//     whose multi was sent when the executor closed may have been
//     applied: it fails with ErrOutcomeUnknown, wrapping task.ErrClosed
//     (test ErrOutcomeUnknown first).
//
// A lost reply is settled by reading the copy, then the marker: a copy
// still there means not applied (sent again while the marker is ours);
// a copy gone while our marker's incarnation (its czxid) is still there
// means applied by the lost send (with the marker in place nobody else
// removes our copies). Ack of an at-most-once item fails with
// task.ErrInvalidArgument.
func (it *Item) Ack() task.Task[task.Unit] {
	if it == nil || it.cons == nil {
		return task.Fail[task.Unit](fmt.Errorf("queue: ack of an item not taken in at-least-once mode: %w", task.ErrInvalidArgument))
	}
	q, cn := it.q, it.cons
	copyPath := q.flight(cn.id, it.czxid, it.Name)
	unchecked := canary.On(bugAckUnchecked)
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if it.acked {
			k(task.Unit{}, nil) // applied by an earlier Ack
			return
		}
		if sess := s.Session(); !unchecked && (sess.ID != cn.sess.ID || sess.Epoch != cn.sess.Epoch) {
			if (it.ackSent || it.acking > 0) && !canary.On(bugAckBesideLostAck) {
				// An earlier Ack of it was sent on the session it was
				// taken on, or still runs there: it may have been
				// applied before that session ended.
				k(task.Unit{}, fmt.Errorf("queue: ack of %s: %w: an earlier ack of it, on %s, may have been applied; ack on %s", it.Name, ErrOutcomeUnknown, cn.sess, sess))
				return
			}
			k(task.Unit{}, fmt.Errorf("%w: %s taken on %s, ack on %s", ErrDeliveryLost, it.Name, cn.sess, sess))
			return
		}
		it.acking++
		a := &acking{it: it, q: q, cn: cn, copyPath: copyPath, unchecked: unchecked, s: s, k: func(v task.Unit, err error) {
			it.acking--
			k(v, err)
		}}
		a.send(nil)
	}
}

// acking is one run of Ack's task.
type acking struct {
	it        *Item
	q         *Queue
	cn        *consumer
	copyPath  string
	unchecked bool
	s         *task.Scope
	k         task.Cont[task.Unit]
	lost      bool // a send's reply was lost
}

func (a *acking) applied() {
	q, it, copyPath, k := a.q, a.it, a.copyPath, a.k
	delete(q.claimed, copyPath)
	it.acked = true
	k(task.Unit{}, nil)
}

func (a *acking) lostErr(err error) {
	q, cn, it, copyPath, k := a.q, a.cn, a.it, a.copyPath, a.k
	delete(q.claimed, copyPath)
	if q.cons == cn {
		q.cons = nil
	}
	if it.acked && !canary.On(bugAckBesideLostAck) {
		k(task.Unit{}, nil) // another Ack of this Item was applied meanwhile
		return
	}
	if (it.acking > 1 || it.ackSent) && !canary.On(bugAckBesideLostAck) {
		// Another Ack of it is under way, or ended without knowing its
		// outcome: its multi may have been applied before our marker
		// went.
		k(task.Unit{}, fmt.Errorf("queue: ack of %s: %w: another ack of it may have been applied: %w", it.Name, ErrOutcomeUnknown, err))
		return
	}
	k(task.Unit{}, fmt.Errorf("queue: ack of %s: %w: %w", it.Name, ErrDeliveryLost, err))
}

func (a *acking) unknown(err error) {
	it, k := a.it, a.k
	it.ackSent = true
	k(task.Unit{}, fmt.Errorf("queue: ack of %s: %w: %w", it.Name, ErrOutcomeUnknown, err))
}

// refused: an operator's ACL refuses the check of our marker or
// the delete of the copy. Not applied, and the item is still ours
// (our marker is there): the ack goes on in the background until
// the ACL lets it or the session ends (zkops.RetryRefused), once
// for the item however many Acks are refused.
func (a *acking) refused(err error) {
	it, s, k := a.it, a.s, a.k
	if !it.ackKept {
		it.ackKept = true
		ack := it.Ack()
		zkops.RetryRefused(s, func(s *task.Scope, k task.Cont[task.Unit]) {
			task.Run(s, ack, func(v task.Unit, err error) {
				if !errors.Is(err, task.ErrNoAuth) {
					it.ackKept = false
				}
				k(v, err)
			})
		})
	}
	k(task.Unit{}, fmt.Errorf("queue: ack of %s: not applied, refused by an ACL (the item is still this consumer's; the ack goes on in the background): %w", it.Name, err))
}

func (a *acking) send(error) {
	cn, it, copyPath, unchecked, s, k := a.cn, a.it, a.copyPath, a.unchecked, a.s, a.k
	ops := []task.MultiOp{
		&task.CheckRequest{Path: cn.marker, Version: 0},
		&task.DeleteRequest{Path: copyPath, Version: task.AnyVersion},
	}
	if unchecked {
		ops = ops[1:]
	}
	task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
		switch i := multiIndex(err); {
		case err == nil, unchecked && errors.Is(err, task.ErrNoNode):
			a.applied()
		case errors.Is(err, task.ErrConnectionLoss):
			a.lost = true
			if canary.On(bugAckLostIsDeliveryLost) {
				a.send(err)
				return
			}
			a.settle(err)
		case errors.Is(err, task.ErrNotSent):
			a.send(err)
		case i == 1 && errors.Is(err, task.ErrNoNode) && a.lost:
			k(task.Unit{}, nil) // (bugAckLostIsDeliveryLost only) the a.lost send deleted it
		case i == 1 && errors.Is(err, task.ErrNoNode) && it.acked:
			k(task.Unit{}, nil) // another Ack of this Item was applied meanwhile
		case i == 1 && errors.Is(err, task.ErrNoNode) && it.acking > 1 && !unchecked && !canary.On(bugAckBesideLostAck):
			// Another Ack of this Item is under way: its multi may
			// have deleted the copy, its reply lost. Settled as a
			// lost reply of ours (the copy gone, our marker there:
			// applied).
			a.lost = true
			a.settle(err)
		case errors.Is(err, task.ErrNoAuth):
			a.refused(err)
		case i == 0 || i == 1:
			a.lostErr(err)
		case errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed):
			// The multi may have been applied before the session
			// ended (its reply a.lost, or not yet handled).
			a.unknown(err)
		default:
			k(task.Unit{}, err)
		}
	})
}

// settle: the copy first, then the marker. A marker of our
// incarnation read after the copy was there all along (an
// incarnation never comes back), so nothing returned the copy.
func (a *acking) settle(cause error) {
	cn, copyPath, s := a.cn, a.copyPath, a.s
	task.Run(s, c.Retry(zkops.AfterSync(copyPath, task.Exists(copyPath)), zkops.Retry), func(cst *task.Stat, err error) {
		if err != nil {
			a.unknown(err)
			return
		}
		task.Run(s, c.Retry(task.Exists(cn.marker), zkops.Retry), func(mst *task.Stat, err error) {
			ours := mst != nil && mst.Czxid == cn.czxid
			switch {
			case err != nil:
				a.unknown(err)
			case cst != nil && ours:
				a.lost = false
				a.send(nil) // not applied: send again
			case cst != nil:
				a.lostErr(fmt.Errorf("the consumer's marker is gone: %w", cause))
			case ours:
				a.applied() // by the a.lost send (or another Ack of this Item)
			default:
				a.unknown(fmt.Errorf("the copy and the consumer's marker are gone: %w", cause))
			}
		})
	})
}

// recover returns the in-flight items of every dead consumer other than
// cn (one whose marker is gone) to the queue. One listing of the
// in-flight directory shows which consumers hold items, and one listing of
// the markers which consumers live: two requests, however many consumers
// there are. The in-flight listing comes first: a consumer holding items
// in it registered before, so if it lives its marker is in the later
// listing. With watch set it succeeds with a children watch on the
// markers when some other consumer holds items, so a waiting take wakes
// when one dies; an unfired watch, and the listing it came with, serve
// the next pass again (no request, no new watch).
func (q *Queue) recover(cn *consumer, watch bool) task.Task[[]*task.Watch] {
	return func(s *task.Scope, k task.Cont[[]*task.Watch]) {
		task.Run(s, q.flights(), func(entries []string, err error) {
			if err != nil {
				k(nil, err)
				return
			}
			// The entries of other consumers, by consumer id (sorted),
			// each consumer's in the listing's order.
			var held []heldEntry // made at the first entry of another consumer
			for _, e := range entries {
				id, _, ok := splitFlight(e)
				if !ok || id == cn.id {
					continue
				}
				if held == nil {
					held = make([]heldEntry, 0, len(entries))
				}
				held = append(held, heldEntry{id, e})
			}
			if len(held) == 0 {
				k(nil, nil)
				return
			}
			slices.SortStableFunc(held, func(a, b heldEntry) int { return strings.Compare(a.id, b.id) })
			es := make([]string, len(held))
			for i, h := range held {
				es[i] = h.entry
			}
			task.Run(s, q.liveConsumers(watch), func(live map[string]bool, err error) {
				if err != nil {
					k(nil, err)
					return
				}
				// next gives back the entries of the consumer whose
				// first is held[i], if it is dead.
				var next func(i int)
				next = func(i int) {
					if i == len(held) {
						var ws []*task.Watch
						if watch && q.consWatch != nil {
							ws = append(ws, q.consWatch)
						}
						k(ws, nil)
						return
					}
					id, end := held[i].id, i+1
					for end < len(held) && held[end].id == id {
						end++
					}
					if live[id] || canary.On(bugNoReturn) {
						next(end)
						return
					}
					task.Run(s, q.giveBack(id, es[i:end:end]), func(_ task.Unit, err error) {
						if err != nil {
							k(nil, err)
							return
						}
						next(end)
					})
				}
				next(0)
			})
		})
	}
}

// heldEntry is an in-flight entry of a consumer (recover).
type heldEntry struct{ id, entry string }

// flights is the listing of the in-flight directory (zkops.Prefixed),
// made once, in New.
func (q *Queue) flights() task.Task[[]string] {
	if q.flightsT != nil {
		return q.flightsT
	}
	return zkops.Prefixed(q.inflight, "")
}

// liveConsumers lists the markers: the ids of the live consumers. With
// watch set the listing sets a children watch, kept (with the listing)
// while it has not fired and followed (sleep): while it has not fired no
// marker came or went, and the kept listing is returned without a request.
func (q *Queue) liveConsumers(watch bool) task.Task[map[string]bool] {
	return func(s *task.Scope, k task.Cont[map[string]bool]) {
		if w := q.consWatch; w != nil {
			if _, fired := w.Fired(); !fired {
				k(q.consLive, nil)
				return
			}
		}
		q.consWatch, q.consLive = nil, nil
		var l task.Task[task.ChildrenWatch]
		if watch {
			l = task.ChildrenW(q.consumers)
		} else {
			l = c.Map(task.Children(q.consumers), func(cl task.ChildList) task.ChildrenWatch { return task.ChildrenWatch{ChildList: cl} })
		}
		task.Run(s, c.Retry(l, zkops.Retry), func(cw task.ChildrenWatch, err error) {
			switch {
			case errors.Is(err, task.ErrNoNode):
				k(nil, nil) // no marker: every holder is dead
			case err != nil:
				k(nil, err)
			default:
				live := make(map[string]bool, len(cw.Names))
				for _, n := range cw.Names {
					live[n] = true
				}
				if cw.Watch != nil {
					q.consWatch, q.consLive = cw.Watch, live
					q.follow(s, cw.Watch)
				}
				k(live, nil)
			}
		})
	}
}

// giveBack moves the in-flight copies entries of dead consumer id back
// to the queue under the items' own names (so they sort where they were),
// each with one multi that also creates and deletes the consumer's
// marker: it applies only if the marker does not exist, so a consumer
// that is alive after all (a marker created again) keeps its items.
func (q *Queue) giveBack(id string, entries []string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		var next func(i int)
		var send func(i int, d task.Data, ds dirState)
		next = func(i int) {
			if i == len(entries) {
				k(task.Unit{}, nil)
				return
			}
			task.Run(s, q.readDir(), func(ds dirState, err error) {
				if err != nil {
					k(task.Unit{}, err)
					return
				}
				task.Run(s, c.Retry(task.Get(q.inflight+"/"+entries[i]), zkops.Retry), func(d task.Data, err error) {
					switch {
					case errors.Is(err, task.ErrNoNode):
						next(i + 1)
					case err != nil:
						k(task.Unit{}, err)
					default:
						send(i, d, ds)
					}
				})
			})
		}
		send = func(i int, d task.Data, ds dirState) {
			path := q.item(returnName(entries[i], d.Stat.Czxid, ds))
			ops := []task.MultiOp{
				&task.CreateRequest{Path: q.marker(id), Mode: task.Persistent, ACL: q.acl.For(q.marker(id))},
				&task.DeleteRequest{Path: q.marker(id), Version: task.AnyVersion},
				q.epochCheck(ds.epoch),
				&task.CreateRequest{Path: path, Data: d.Data, Mode: task.Persistent, ACL: q.acl.For(path)},
				&task.DeleteRequest{Path: q.inflight + "/" + entries[i], Version: d.Stat.Version},
			}
			task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
				switch i0 := multiIndex(err); {
				case err == nil:
					next(i + 1)
				case errors.Is(err, task.ErrNoAuth):
					// Not applied: an ACL refuses one of the ops. The
					// items stay in flight; a later pass returns them.
					k(task.Unit{}, err)
				case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
					send(i, d, ds) // applied before: the copy is gone and this fails at op 4
				case i0 == 0 && errors.Is(err, task.ErrNodeExists):
					k(task.Unit{}, nil) // the consumer is alive after all
				case i0 == 0 && errors.Is(err, task.ErrNoNode):
					// The markers' directory deleted by hand.
					task.Run(s, zkops.EnsurePath(q.consumers, q.acl), func(_ task.Unit, err error) {
						if err != nil {
							k(task.Unit{}, err)
							return
						}
						send(i, d, ds)
					})
				case i0 == 2 || (i0 == 3 && errors.Is(err, task.ErrNoNode)):
					// The directory was created again (or deleted) since
					// it was read: read it again.
					q.staleEpoch(ds.epoch)
					next(i)
				case i0 >= 3:
					next(i + 1) // returned by someone else meanwhile
				default:
					k(task.Unit{}, err)
				}
			})
		}
		next(0)
	}
}

// Waiting on several watches. A waiting take sleeps on the queue
// (sleep) and each watch it waits for wakes every sleeper when it fires
// (follow). The watch on the markers' directory can serve many waits
// (while no consumer comes or goes): waiting on it with Watch.Wait in
// each take would leave one waiter per wait on it (a Wait abandoned by
// its scope stays on the watch until it fires). Here each watch has one
// waiter, a flow of its own, and a sleeper abandoned by its take is
// removed.

// follow starts the flow that wakes the queue's sleepers when w fires (or
// its session ends). It is called once per watch.
func (q *Queue) follow(s *task.Scope, w *task.Watch) {
	task.Go(s, w.Wait(), func(task.Event, error) { q.wake() })
}

// wake resumes every sleeper, in the order they slept.
func (q *Queue) wake() {
	ss := q.sleepers
	q.sleepers = nil
	for _, sl := range ss {
		sl.resume(task.Unit{}, nil)
	}
}

type sleeper struct{ resume task.Cont[task.Unit] }

// sleep waits until one of ws fires: at once if one has, else until a
// followed watch wakes the queue. Every watch of ws must be followed.
func (q *Queue) sleep(ws []*task.Watch) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		for _, w := range ws {
			if _, fired := w.Fired(); fired {
				k(task.Unit{}, nil) // the caller lists again (and learns of a session's end)
				return
			}
		}
		task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
			sl := &sleeper{resume: resume}
			q.sleepers = append(q.sleepers, sl)
			return func() { q.sleepers = slices.DeleteFunc(q.sleepers, func(x *sleeper) bool { return x == sl }) }
		})
	}
}

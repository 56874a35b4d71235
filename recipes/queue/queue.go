package queue

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Known queue bugs that tests switch back on (internal/canary), to show the
// simulation catches each one.
const (
	// bugDeleteNoNodeIsTaken: at-most-once, a take whose delete finds the
	// item gone delivers it anyway (the data was read first): an item
	// another consumer took is delivered twice.
	bugDeleteNoNodeIsTaken canary.Name = "queue/delete-nonode-is-taken"
	// bugLossRetryIsTaken: at-most-once, a delete whose reply was lost is
	// sent again and a NoNode then is taken for our own delete: when
	// another consumer took the item in between, it is delivered twice.
	bugLossRetryIsTaken canary.Name = "queue/lost-delete-retry-is-taken"
	// bugNewestFirst: a take tries the items newest first within a
	// priority (the sort reversed): FIFO is broken.
	bugNewestFirst canary.Name = "queue/newest-first"
	// bugTakeByDelete: at-least-once, a take deletes the item with no
	// in-flight copy: a consumer that dies before its ack loses it.
	bugTakeByDelete canary.Name = "queue/at-least-once-take-by-delete"
	// bugAckUnchecked: at-least-once, an ack deletes the in-flight copy
	// without checking the consumer's marker and takes NoNode for done:
	// an item returned to the queue after its consumer's session ended is
	// acknowledged by the old consumer and again by the next.
	bugAckUnchecked canary.Name = "queue/ack-unchecked"
	// bugNoReturn: at-least-once, the in-flight items of a dead consumer
	// are never returned to the queue.
	bugNoReturn canary.Name = "queue/no-return"
	// bugPutAtExhausted: once the counter has run out, puts queue items
	// under its last number, which it hands out again, and takes take
	// them: a take deletes an item put under the name of one it read.
	bugPutAtExhausted canary.Name = "queue/put-at-exhausted-counter"
	// bugAckLostIsDeliveryLost: at-least-once, an ack whose reply was lost
	// and whose retry finds the consumer's marker gone reports
	// ErrDeliveryLost although the first send may have been applied.
	bugAckLostIsDeliveryLost canary.Name = "queue/lost-ack-is-delivery-lost"
	// bugAckBesideLostAck: an Ack beside another Ack of the same Item
	// whose outcome it cannot know reports ErrDeliveryLost ("not
	// applied, the item goes back") for an item the other's multi may
	// have acknowledged: one that finds the copy gone while the other,
	// its reply lost, has not settled yet; one run on a later session
	// after the other was sent on the item's (and ended unknown, or
	// still runs).
	bugAckBesideLostAck canary.Name = "queue/ack-beside-lost-ack"
	// bugPutBackAsPut: at-most-once, an item a take deleted but could not
	// deliver is put back with a put: the queue's bound or a counter run
	// out refuses it, and the item is lost.
	bugPutBackAsPut canary.Name = "queue/put-back-as-put"
	// bugPutBackAboveCounter: at-most-once, an item put back after a take
	// that ended early is always named above the counter's range (2^32
	// plus its czxid), as it once was: behind every item put later, so
	// items are not taken in the order their creates were applied.
	bugPutBackAboveCounter canary.Name = "queue/put-back-above-counter"
	// bugEpochAnySession: the epoch's version read on one session is
	// used by takes on another, whose member may be behind that read (a
	// new session after an expiry, another executor's): a listing of an
	// earlier incarnation of the directory passes the epoch's check.
	bugEpochAnySession canary.Name = "queue/epoch-any-session"
	// bugPutBackAboveAnyIncarnation: an at-most-once put-back named above
	// the counter (the counter had run out) is created in whatever
	// incarnation of the directory is there by then: one deleted and
	// created again since, with a counter that starts over, takes it after
	// items put later.
	bugPutBackAboveAnyIncarnation canary.Name = "queue/put-back-above-any-incarnation"
	// bugOneRegistration: at-least-once, every take that finds no consumer
	// of its session registers one, and each registration forgets the
	// copies the takes of the one before delivered: a take of the first
	// settling a lost reply finds its copy unclaimed and delivers the item
	// a second time.
	bugOneRegistration canary.Name = "queue/concurrent-registrations"
	// bugClaimless: at-least-once, a take of a consumer that finds its
	// copy of the item existing takes it for its own even when another
	// take of the same consumer made it: the item is delivered twice to
	// the consumer, and both acks succeed.
	bugClaimless canary.Name = "queue/copy-exists-is-ours"
	// bugGiveBackExistsFails: at-least-once, a give-back sent again after
	// its reply was lost finds the item it put back and reports a failure
	// to Config.OnError, the item back in the queue.
	bugGiveBackExistsFails canary.Name = "queue/give-back-exists-fails"
)

// Errors of the queue, tested with errors.Is.
var (
	// ErrFull: a Put on a bounded queue found it holding its bound of items
	// (see WithBound); nothing was created.
	ErrFull = errors.New("queue: full")
	// ErrOutcomeUnknown: the reply to the request that decides the call was
	// lost (connection loss) and a retry cannot tell what happened. For
	// Put: the item may or may not be in the queue. For an at-most-once
	// Take: the item (UnknownTakeError.Item) is gone from the queue, taken
	// either by this call or by another consumer, and is not delivered. For
	// Ack: the session ended after the reply was lost, or another Ack of
	// the same Item whose outcome is not known may have been applied (an
	// Ack called again after one whose context ended, say); the ack may or
	// may not have been applied (if not, the item goes back to the queue).
	ErrOutcomeUnknown = errors.New("queue: outcome unknown (reply lost)")
	// ErrDeliveryLost: an at-least-once Ack that was not applied because
	// the item is no longer this consumer's: its session ended or its
	// consumer marker was deleted, so the item is (or will be) back in the
	// queue for another delivery. It is a recipes.ErrLost: errors.Is(err,
	// recipes.ErrLost) holds for it, as for a lost lock or lease.
	ErrDeliveryLost error = &lostError{"queue: delivery lost (the item goes back to the queue)"}
	// ErrExhausted: a Put found the directory's sequence counter run out
	// (2^31-1 creates in one directory) while the directory is not empty:
	// items are queued, or nodes that are not items (another program's,
	// which the queue skips and never deletes). Nothing was put. Puts go
	// on once the directory holds neither (the first put then restarts the
	// counter); see "Names handed out again" in PROTOCOL.md.
	ErrExhausted = errors.New("queue: the directory's counter has run out")
)

// UnknownTakeError is the error of an at-most-once Take whose delete's
// reply was lost: the item is no longer in the queue, and nobody can tell
// whether this call or another consumer deleted it. It is not delivered
// (that could deliver it twice); it is reported, with its data, so that it
// is not lost silently. It wraps ErrOutcomeUnknown and the delete's error.
// The executor's Config.OnError also gets one for an item a take that
// ended early deleted and whose put-back's outcome is unknown (see
// Client.Take), and for one it deleted as the session ended.
type UnknownTakeError struct {
	Item Item
	Err  error
}

func (e *UnknownTakeError) Error() string {
	return fmt.Sprintf("queue: take of %s: %v: %v", e.Item.Name, ErrOutcomeUnknown, e.Err)
}

// Unwrap returns ErrOutcomeUnknown and the delete's error.
func (e *UnknownTakeError) Unwrap() []error { return []error{ErrOutcomeUnknown, e.Err} }

// PutBackError goes to the executor's Config.OnError for an at-most-once
// item that a take which ended early deleted and could not put back for
// a known reason (the create was refused: not applied): the item is out
// of the queue, delivered to no one, and reported with its data so that
// it is not lost silently. A put-back whose outcome is unknown is
// reported as an *UnknownTakeError instead.
type PutBackError struct {
	Item Item
	Err  error // the put-back's error
}

func (e *PutBackError) Error() string {
	return fmt.Sprintf("queue: %s, deleted by a take that ended early, not put back: %v", e.Item.Name, e.Err)
}

// Unwrap returns the put-back's error.
func (e *PutBackError) Unwrap() error { return e.Err }

// Mode is a queue's delivery guarantee.
type Mode int

const (
	// AtMostOnce: Take deletes the item; an item is never delivered twice,
	// and may be lost to a consumer that crashes after the take (or whose
	// take's reply was lost: UnknownTakeError).
	AtMostOnce Mode = iota
	// AtLeastOnce: Take moves the item to the consumer's in-flight
	// directory and Item.Ack deletes it there; an item whose consumer's
	// session ends before the ack goes back to the queue. An item is never
	// acknowledged twice and never lost, and may be delivered more than
	// once.
	AtLeastOnce
)

func (m Mode) String() string {
	switch m {
	case AtMostOnce:
		return "at-most-once"
	case AtLeastOnce:
		return "at-least-once"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// MinPriority and MaxPriority bound an item's priority (PutPriority).
// Lower numbers are taken first; Put uses priority 0.
const (
	MinPriority = -999
	MaxPriority = 999
)

// Item is a taken item: its node name in the queue directory, its
// priority and sequence number (parsed from the name), its data, and, in
// at-least-once mode, what Ack needs.
type Item struct {
	Name     string
	Priority int
	Seq      int64
	Data     []byte

	// czxid names the incarnation taken: a name can be handed out again.
	czxid int64
	// at-least-once only
	q     *Queue
	cons  *consumer
	acked bool // an Ack of it was applied (executor goroutine)
	// ackKept: an Ack of it an ACL refused goes on in the background
	// (executor goroutine).
	ackKept bool
	// acking counts the Acks of it under way (executor goroutine): one
	// that finds the copy gone may have been beaten by another whose
	// reply was lost and which has not settled yet.
	acking int
	// ackSent: an Ack of it ended with ErrOutcomeUnknown (its multi sent,
	// maybe applied): an Ack on a later session cannot say "not
	// applied" (executor goroutine).
	ackSent bool
}

// Queue is a distributed queue on one ZooKeeper directory. In
// at-most-once mode it holds no state and may be shared by any flows and
// executors. In at-least-once mode it holds the consumer registration of
// the session its Takes last ran on: use one Queue per executor.
type Queue struct {
	dir, inflight, consumers string
	acl                      task.ACLProvider
	mode                     Mode
	bound                    int

	cons *consumer // at-least-once: the registered consumer (executor goroutine)
	// consWatch and consLive: at-least-once, the children watch on the
	// markers' directory and the live consumers it was set with (acked.go).
	consWatch *task.Watch
	consLive  map[string]bool
	// sleepers: at-least-once, the takes waiting for a watch (acked.go).
	sleepers []*sleeper
	// claimed: at-least-once, the in-flight copies a take of this Queue
	// has delivered and that are not acknowledged, with the id of the
	// session they were taken on (acked.go).
	claimed map[string]int64
	// registering: at-least-once, the registration of a consumer under
	// way; the takes of its session wait for it (acked.go).
	registering *registration
	// epoch: the epoch's version as a session read it, nil when not
	// known (epoch.go).
	epoch atomic.Pointer[epochRead]
	// settling counts the takes' deletes or moves in flight and the
	// give-backs of takes that ended first (giveback.go, Client.Settle).
	settling blocking.Pending
	// lists: the directory's listing tasks, without and with a watch
	// (tasks are values: built once, in New).
	lists [2]task.Task[task.ChildrenWatch]
	// epochP, epochV and registeredT: epochPath, and epochVersion's and
	// registered's tasks, made in New.
	epochP      string
	epochV      task.Task[int32]
	registeredT task.Task[*consumer]
	flightsT    task.Task[[]string] // at-least-once: flights's task, made in New
	// sizes: the paths a put's checkSize measures, by priority, made on
	// first use (size.go).
	sizeMu sync.Mutex
	sizes  map[int]*sizePaths
}

// New returns the queue whose items live under dir (created, with its
// ancestors, on first use). Options: WithMode, WithBound, WithACL. The
// queue also uses the sibling node dir+".epoch" and, in at-least-once
// mode, the sibling directories dir+".inflight" and dir+".consumers":
// give no other queue or recipe a path among those four (a queue on
// "/jobs" and another on "/jobs.epoch" would share a node).
func New(dir string, opts ...Option) (*Queue, error) {
	if err := task.ValidatePath(dir, false); err != nil {
		return nil, fmt.Errorf("queue: directory %q: %w", dir, err)
	}
	if dir == "/" {
		return nil, fmt.Errorf("queue: directory %q: %w", dir, task.ErrInvalidPath)
	}
	q := &Queue{dir: dir, inflight: dir + ".inflight", consumers: dir + ".consumers"}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("queue: nil option: %w", task.ErrInvalidArgument)
		}
		if err := o.apply(q); err != nil {
			return nil, err
		}
	}
	q.lists = [2]task.Task[task.ChildrenWatch]{q.buildList(false), q.buildList(true)}
	q.epochP = dir + ".epoch"
	q.epochV = q.buildEpochVersion()
	q.registeredT = q.buildRegistered()
	if q.mode == AtLeastOnce {
		q.flightsT = zkops.Prefixed(q.inflight, "")
	}
	return q, nil
}

// zero reports a Queue not made by New (nil, or a zero value).
func (q *Queue) zero() bool { return q == nil || q.dir == "" }

// errNil is the error of a method of a nil or zero value.
func errNil(what string) error {
	return fmt.Errorf("queue: nil or zero %s (not made by its constructor): %w", what, task.ErrInvalidArgument)
}

// Dir is the queue's directory.
func (q *Queue) Dir() string { return q.dir }

// Mode is the queue's delivery guarantee.
func (q *Queue) Mode() Mode { return q.mode }

func (q *Queue) item(name string) string { return q.dir + "/" + name }

// prefix is the name a put sends (the server appends the sequence
// number): "qn-" for priority 0, as ZooKeeper's DistributedQueue names
// its items; "qp+007-" or "qp-012-" otherwise, which DistributedQueue
// skips (its parser wants "qn-" and a number).
func prefix(priority int) string {
	if priority == 0 {
		return "qn-"
	}
	return fmt.Sprintf("qp%+04d-", priority)
}

// parse reads an item's priority and sequence number from its name; ok is
// false for a name that is not an item's.
func parse(name string) (priority int, seq int64, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(name, "qn-"):
		rest = name[3:]
	case strings.HasPrefix(name, "qp") && len(name) > 7 && (name[2] == '+' || name[2] == '-') && name[6] == '-':
		p, err := strconv.Atoi(name[2:6])
		if err != nil || p == 0 {
			return 0, 0, false
		}
		priority, rest = p, name[7:]
	default:
		return 0, 0, false
	}
	// ZooKeeper's DistributedQueue parses the suffix as a Java long.
	seq, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return priority, seq, true
}

// exhausted reports whether seq is a number the directory's counter hands
// out once it has run out: int32's maximum, which it hands out again, or
// a negative one (a real server preparing creates while one is in its
// pipeline). Such a node is never an item. Numbers above int32's maximum
// are items returned from a directory that was deleted and created again
// (returnName).
func exhausted(seq int64) bool { return seq == math.MaxInt32 || seq < 0 }

// countItems is len(ordered(nil, names)), without making the items.
func countItems(names []string) int {
	n := 0
	keepExhausted := canary.On(bugPutAtExhausted)
	for _, name := range names {
		if _, s, ok := parse(name); ok && (keepExhausted || !exhausted(s)) {
			n++
		}
	}
	return n
}

// ordered returns the item names among names, lowest priority number
// first and, within a priority, lowest sequence number first. Names with
// an exhausted number (zkops.Exhausted: the counter has run out and hands
// it out again) are not items: puts withdraw them. The items are put in
// buf, an empty buffer (nil, or the items of a take's last round, done
// with) if it has room for them.
func ordered(buf []Item, names []string) []Item {
	out := buf[:0]
	keepExhausted := canary.On(bugPutAtExhausted)
	for i, n := range names {
		if p, s, ok := parse(n); ok && (keepExhausted || !exhausted(s)) {
			if len(out) == 0 && cap(out) < len(names)-i {
				out = make([]Item, 0, len(names)-i) // room for every item
			}
			out = append(out, Item{Name: n, Priority: p, Seq: s})
		}
	}
	newest := canary.On(bugNewestFirst)
	slices.SortFunc(out, func(a, b Item) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		if newest {
			a, b = b, a
		}
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Put returns a task that adds data at the back of the queue with
// priority 0 and succeeds with the item's name. See PutPriority.
func (q *Queue) Put(data []byte) task.Task[string] { return q.PutPriority(data, 0) }

// PutPriority returns a task that adds data with the given priority
// (MinPriority..MaxPriority; lower is taken first) and succeeds with the
// item's name. It creates one persistent-sequential node, creating the
// directory first if it is missing. On a bounded queue it first counts
// the items and fails with ErrFull at the bound (see WithBound for the
// bound's precision). A create whose reply was lost is not sent again
// (that could enqueue the item twice): the task fails with an error
// wrapping ErrOutcomeUnknown and the cause (task.ErrConnectionLoss, or
// task.ErrSessionExpired when the session ended with the create sent),
// and the item may or may not be in the queue. Once the directory's
// counter has run out (see "Names handed out again" in PROTOCOL.md), the
// put restarts it if the directory is empty and fails with ErrExhausted,
// nothing queued, if it is not. Out-of-range priorities fail at once with
// task.ErrInvalidArgument; data over the server's limit with the
// create's error (task.ErrDataTooLarge... as the Conn reports it), and
// data that fits the create but not the larger requests the queue makes
// with an item (at least once, the take's move and the returns from
// flight; at most once, a put-back under a name above the counter's)
// fails at once with an error wrapping task.ErrDataTooLarge, nothing sent
// (measured as the connection sends them, task.PacketRoom; PROTOCOL.md,
// Put: about 400 bytes under task.MaxDataSize with no root and the
// default limit).
func (q *Queue) PutPriority(data []byte, priority int) task.Task[string] {
	if q.zero() {
		return task.Fail[string](errNil("Queue"))
	}
	if priority < MinPriority || priority > MaxPriority {
		return task.Fail[string](fmt.Errorf("queue: priority %d outside %d..%d: %w", priority, MinPriority, MaxPriority, task.ErrInvalidArgument))
	}
	return func(s *task.Scope, k task.Cont[string]) {
		sp := q.sizePathsOf(priority)
		if err := q.checkSize(s, data, sp); err != nil {
			k("", err)
			return
		}
		p := &putting{q: q, s: s, k: k, path: sp.put, data: data}
		if q.bound <= 0 {
			p.create()
			return
		}
		task.Run(s, c.Retry(task.Children(q.dir), zkops.Retry), func(cl task.ChildList, err error) {
			switch {
			case errors.Is(err, task.ErrNoNode):
				p.create()
			case err != nil:
				k("", err)
			case countItems(cl.Names) >= q.bound:
				k("", fmt.Errorf("%w: %s holds %d items", ErrFull, q.dir, q.bound))
			default:
				p.create()
			}
		})
	}
}

// putting is one run of PutPriority's task, or of a put-back's
// (putBackTask: back is the item put back).
type putting struct {
	q    *Queue
	s    *task.Scope
	k    task.Cont[string]
	path string
	data []byte
	back *Item
}

func (p *putting) create() {
	q, s, k, path, data := p.q, p.s, p.k, p.path, p.data
	req := &task.CreateRequest{Path: path, Data: data, Mode: task.PersistentSequential, ACL: q.acl.For(path)}
	task.Run(s, task.CreateWith(req), func(cr task.Created, err error) {
		switch {
		case err == nil:
			if _, seq, ok := parse(task.Base(cr.Path)); ok && exhausted(seq) && !canary.On(bugPutAtExhausted) {
				// Not an item (takes skip it): withdrawn below.
				p.runOut()
				return
			}
			k(task.Base(cr.Path), nil)
		case errors.Is(err, task.ErrNoNode):
			task.Run(s, q.ensureDir(), func(_ task.Unit, err error) {
				if err != nil {
					k("", err)
					return
				}
				p.create()
			})
		case errors.Is(err, task.ErrNotSent):
			p.create()
		case errors.Is(err, task.ErrNodeExists):
			// The counter named a node that exists: it has run
			// out, or (after a restart) it reached the name of an
			// item given back under its own name. Nothing created.
			p.bump()
		case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed):
			// The create may have been applied (its reply lost, or
			// the session ended before it was handled).
			k("", fmt.Errorf("queue: put to %s: %w: %w", q.dir, ErrOutcomeUnknown, err))
		default:
			k("", err)
		}
	})
}

// bump moves the counter on by one (an ephemeral-sequential node,
// deleted at once, that no take reads) and creates again, unless
// the number it got says the counter has run out.
func (p *putting) bump() {
	q, s, k := p.q, p.s, p.k
	req := &task.CreateRequest{Path: q.item(bumpPrefix), Mode: task.EphemeralSequential, ACL: q.acl.For(q.item(bumpPrefix))}
	task.Run(s, task.CreateWith(req), func(cr task.Created, err error) {
		switch {
		case err == nil:
			seq, _ := zkops.SeqAfter(task.Base(cr.Path), bumpPrefix)
			task.Run(s, zkops.Delete(cr.Path), func(_ task.Unit, err error) {
				switch {
				case err != nil:
					k("", err)
				case exhausted(seq):
					p.runOut()
				default:
					p.create()
				}
			})
		case errors.Is(err, task.ErrNoNode):
			p.create() // the directory went: create makes it again
		case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
			// Applied or not, the counter has moved on or the
			// next create tells: an ephemeral left behind goes
			// with the session (no take reads it).
			p.create()
		case errors.Is(err, task.ErrNodeExists):
			p.runOut() // even the bump's number is taken: run out
		default:
			k("", err)
		}
	})
}

// runOut: the counter has run out. Delete every node named
// with an exhausted number (none is an item: takes skip them),
// then the directory if that leaves it empty, so that the next
// create starts the counter again at zero; otherwise refuse.
func (p *putting) runOut() {
	q, s, k := p.q, p.s, p.k
	task.Run(s, q.withdrawExhausted(), func(restarted bool, err error) {
		switch {
		case err != nil:
			k("", err)
		case restarted:
			p.create()
		case p.back != nil:
			q.putBackAbove(s, *p.back, p, k)
		default:
			k("", fmt.Errorf("%w: %s: its counter has run out and the directory is not empty (items are queued, or nodes that are not items)", ErrExhausted, q.dir))
		}
	})
}

// bumpPrefix names the node a put creates to move the counter past a name
// that is taken: neither ours nor DistributedQueue's item names.
const bumpPrefix = "qz-"

// deleteBump deletes path if it is a put's bump: an ephemeral node. A
// persistent node of that name is another program's, left alone (the
// directory then stays, not empty: ErrExhausted).
func deleteBump(path string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, c.Retry(task.Exists(path), zkops.Retry), func(st *task.Stat, err error) {
			switch {
			case err != nil:
				task.Run(s, zkops.GoneOK(err), k)
			case st == nil || st.EphemeralOwner == 0:
				k(task.Unit{}, nil)
			default:
				task.Run(s, zkops.DeleteNode(path, *st), k)
			}
		})
	}
}

// withdrawExhausted deletes the directory's nodes named with an exhausted
// number (not items: takes skip them, so deleting one loses nothing) and
// the puts' bumps, then the directory if it is empty: restarted is true when the directory
// is gone, so the next create starts its counter at zero.
func (q *Queue) withdrawExhausted() task.Task[bool] {
	return func(s *task.Scope, k task.Cont[bool]) {
		task.Run(s, c.Retry(task.Children(q.dir), zkops.Retry), func(cl task.ChildList, err error) {
			switch {
			case errors.Is(err, task.ErrNoNode):
				k(true, nil)
				return
			case err != nil:
				k(false, err)
				return
			}
			var dead []string
			for _, n := range cl.Names {
				if _, seq, ok := parse(n); (ok && exhausted(seq)) || strings.HasPrefix(n, bumpPrefix) {
					dead = append(dead, n) // (a put's bump, left by a lost reply, too)
				}
			}
			var next func(i int)
			next = func(i int) {
				if i == len(dead) {
					task.Run(s, q.removeDir(), k)
					return
				}
				del := zkops.Delete(q.item(dead[i]))
				if strings.HasPrefix(dead[i], bumpPrefix) {
					del = deleteBump(q.item(dead[i]))
				}
				task.Run(s, del, func(_ task.Unit, err error) {
					if err != nil {
						k(false, err)
						return
					}
					next(i + 1)
				})
			}
			next(0)
		})
	}
}

// Take returns a task that waits for an item and takes the first one: the
// lowest priority number, and within it the lowest sequence number. In
// at-most-once mode the item is deleted (take.go); in at-least-once mode
// it is moved to the consumer's in-flight directory and must be
// acknowledged with Item.Ack (acked.go). While the queue is empty it waits
// on a children watch of the directory (no polling but the re-read of
// task.Watch every twice the session timeout; a watch another user of
// the session removes, RemoveWatches, is one more wake-up). It fails with the
// scope's error when its deadline passes or it is canceled, with
// task.ErrSessionExpired when the session ends, and with an
// *UnknownTakeError (at-most-once) when a delete's reply was lost and the
// item is gone.
func (q *Queue) Take() task.Task[*Item] {
	if q.zero() {
		return task.Fail[*Item](errNil("Queue"))
	}
	if q.mode == AtLeastOnce {
		return q.takeAcked()
	}
	return q.takeDelete()
}

// list is the listing of the queue's directory, with a watch or not,
// retried: a take runs it (listing), creating the directory when it is
// missing (again, if it is deleted again before the listing). Nodes
// named with an exhausted number (not items, see ordered) are deleted in
// a flow of its own: a put whose withdrawal was cut short (its session
// ended, its process crashed) leaves one behind.
func (q *Queue) list(watch bool) task.Task[task.ChildrenWatch] {
	i := 0
	if watch {
		i = 1
	}
	if l := q.lists[i]; l != nil {
		return l
	}
	return q.buildList(watch)
}

// buildList builds list's task.
func (q *Queue) buildList(watch bool) task.Task[task.ChildrenWatch] {
	var l task.Task[task.ChildrenWatch]
	if watch {
		l = task.ChildrenW(q.dir)
	} else {
		l = c.Map(task.Children(q.dir), func(cl task.ChildList) task.ChildrenWatch { return task.ChildrenWatch{ChildList: cl} })
	}
	return c.Retry(l, zkops.Retry)
}

// sweep deletes the nodes among names that are named with an exhausted
// number, in a flow of its own (errors ignored: the next listing sweeps
// again).
func (q *Queue) sweep(s *task.Scope, names []string) {
	if canary.On(bugPutAtExhausted) {
		return
	}
	for _, n := range names {
		if _, seq, ok := parse(n); ok && exhausted(seq) {
			task.Go(s, zkops.Delete(q.item(n)), func(task.Unit, error) {})
		}
	}
}

// lostError is ErrDeliveryLost: its own value, and a recipes.ErrLost.
type lostError struct{ msg string }

func (e *lostError) Error() string        { return e.msg }
func (e *lostError) Is(target error) bool { return target == recipes.ErrLost }

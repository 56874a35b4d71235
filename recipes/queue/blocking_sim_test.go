package queue

// The blocking face under the simulation. These tests are in the package
// itself (not queue_test) so that their TestSimExplore and
// TestSimDeterminism run beside those of sim_test.go under the names
// make sim selects.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

const bsimDir = "/jobs/b"

// Where a call's context ends.
const (
	endNone   = iota // it does not
	endBefore        // before the call (Put, Take)
	endDuring        // while it waits (a step or an instant drawn)
	endAfter         // just after it returns
	endInside        // while the item taken is worked on
	endGive          // while Ack runs
	numEnds
)

var endNames = [numEnds]string{"none", "before", "during", "after", "inside", "give"}

// bsimItem is what the scenario knows of one item (keyed by its data,
// unique per run).
type bsimItem struct {
	put       bool // Put returned without error
	refused   bool // Put ended with ErrExhausted, ErrFull or task.ErrNoAuth, or was called with its context ended: never in the queue
	delivered int
	acked     int
	// unsure: an Ack of it returned before its outcome was known (its
	// context ended, ErrOutcomeUnknown, the session ended), or its actor
	// died inside an Ack.
	unsure bool
	inAck  int   // Acks called that have not returned
	lostAt []int // deliveries whose Ack ended with ErrDeliveryLost
	// lostAgain: deliveries whose Ack, called again at once after one
	// whose context ended (that one going on in the background), ended
	// with ErrDeliveryLost: not applied, so the item must come back.
	lostAgain []int
	// movedAt: per delivery (at-least-once), in the order the takes
	// returned, the zxid of the move that delivered it (its in-flight
	// copy's czxid, from the server's journal): the item came back
	// between two moves of it. Not the incarnation the take read
	// (Item.czxid): a move sent on a read older than a return of the item
	// takes the incarnation returned, in a copy named after the one read
	// (sim_test.go's movedAt, seed 68079765663136 there).
	movedAt []int64
	unknown bool // an at-most-once take ended with UnknownTakeError
	// backOn: client+1 whose process has sent the put-back of this item
	// (at-most-once, taken as its take ended) and not yet heard it
	// applied; backDied: that process crashed meanwhile (bsimConn).
	backOn   int
	backDied bool
	inPut    bool // its Put has not returned: a create of it is the Put's
}

// blockingSim drives a queue of one mode through its Client from
// actors: each of 3 clients has one Client shared by a producer (Put in
// a loop) and two consumers (Take, work a while, and at-least-once Ack,
// deferred, with the Take's context). Each call's context is drawn to
// end nowhere, before the call, while it waits, just after it, while the
// item is worked on, or while the Ack runs. The seed draws the counter
// faults (the directory's cversion set near its maximum, the empty
// directory deleted) beside the other faults; at least once, a seed
// whose plan has the restart class has one aimed at its first give-back
// (aimRestart).
//
// Judged by each call's error, one its doc allows it (callRules,
// sim.Call.Judge: a context's end only once that context has ended, and
// of its kind), a call whose context had ended returning its error at
// once and
// the item of such a Put never delivered; and by the checkers of the
// task-face scenario: every item delivered
// was put and not refused; at-most-once, never delivered twice;
// at-least-once, never acknowledged twice, every item whose Put
// succeeded acknowledged in the end (or an Ack of it returned before its
// outcome was known), and an item whose Ack ended with ErrDeliveryLost
// delivered again. Liveness: once the faults stop every client puts and
// takes again within Recovery; quiescence: the queue drains and no
// in-flight copy is left (a Take canceled mid-way gave its item back, an
// Ack given an ended context acknowledged in the background: a copy
// left in flight by a live consumer never comes back); at-least-once, a
// consumer's marker is deleted only by its own session's end or the
// operator (sim.Scenario.OwnDeletes, judged from the server's journal).
type blockingSim struct {
	mode    Mode
	clients int
	// copies: at-least-once, the czxid of each in-flight copy made, by
	// its path on the server (copyJournal); srvInflight is the in-flight
	// directory's server path and "/" ("" before the first Setup)
	copies      map[string]int64
	srvInflight string
	items       map[string]*bsimItem
	keys        []string
	next        int
	ended       [numEnds]int // takes that delivered, by where their context ended
	tried       [numEnds]int
	acks        int
	putting     int // Puts under way, in every client
	// killedTakes counts the Takes whose process crashed while they ran:
	// at most once, each may have deleted an item no one then received.
	killedTakes int
	// over counts the calls made with a context ended before them
	// (judged at once), by call.
	over  [len(callNames)]int
	rules [len(callNames)]sim.CallRules // callRules of mode
	// r is the seed's Trial; aimed: a restart was aimed at a
	// give-back (aimRestart), once a seed.
	r     *sim.Trial
	aimed bool
}

// bsimBound is the at-most-once queue's bound (WithBound).
const bsimBound = 3

// copyJournal hears every commit of the server (fakezk.Config.Journal):
// it records the czxid of each in-flight copy made, by its path, so that
// a delivery is dated by the move that made its copy, whatever
// incarnation of the item its take read.
func (s *blockingSim) copyJournal(c fakezk.Commit) {
	if s.srvInflight == "" {
		return
	}
	for _, n := range c.Nodes {
		if n.Stat.Czxid == c.Zxid && strings.HasPrefix(n.Path, s.srvInflight) {
			s.copies[n.Path] = c.Zxid
		}
	}
}

func newBlockingSim(mode Mode) (*blockingSim, sim.Scenario) {
	s := &blockingSim{mode: mode, clients: 3, rules: callRules(mode)}
	sc := sim.Scenario{
		Name:       "queue/" + mode.String() + "/blocking",
		InJobEnds:  true,
		ActorLag:   true,
		OutageEnds: true,
		Clients:    s.clients,
		Faults:     sim.Faults{Allow: sim.AllFaults&^sim.Of(sim.Operator) | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.01},
		Counters:   []string{bsimDir},
		ACL:        []string{bsimDir},
		Duration:   15 * time.Second,
		Server:     fakezk.Config{Journal: s.copyJournal},
		Setup: func(r *sim.Trial) error {
			s.copies, s.srvInflight = map[string]int64{}, r.World.ServerPath(bsimDir+".inflight")+"/"
			s.items, s.keys, s.next, s.putting, s.killedTakes = map[string]*bsimItem{}, nil, 0, 0, 0
			s.r, s.aimed = r, false
			return nil
		},
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.startClient(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) {
			s.crashed(i)
			s.startClient(r, i)
		},
		Wrap: func(i int, c *fakezk.Conn) task.Conn { return &bsimConn{Conn: c, s: s, i: i} },
		Quiesce: func(r *sim.Trial) bool {
			if r.Actors() > 0 {
				return false
			}
			return s.drained(r)
		},
		Invariants: []sim.Invariant{sim.InvariantFunc(s.noneLost)},
		Regressions: []sim.Regression{
			{Seed: 620, ReconnectLag: true, Root: sim.ExploreRoot, Why: "at-most-once: a take's delete applied with its reply lost, the session back through a member that had not applied it: the settle read saw the item and the take ended without it: item-51 lost (the settle reads now follow a sync)"},
			{Seed: 1644, ReconnectLag: true, Root: sim.ExploreRoot, Why: "at-least-once: the same class, a move or an ack settled on a member that had not applied it: item-29 never acknowledged"},
			{Seed: 17, Why: "at-least-once, acl class: an Ack refused by an ACL on the consumer's marker returned ErrDeliveryLost (the item goes back), which it never did while the consumer lived: the test waited for it in vain (now ErrNoAuth, the ack going on in the background)"},
			{Seed: 150, Why: "at-least-once, acl class: a take's return of a dead consumer's item, its epoch check refused by an ACL, read the refusal as a moved epoch and sent the return again at once, without end (flows ran at one instant; now the take fails with ErrNoAuth)"},
			{Seed: 9200575, Why: "at-most-once, acl class: the put-back of an item deleted as its take ended, refused by an ACL on the closed directory, was reported as not put back: item-1 lost (now sent again until allowed)"},
			{Seed: 9000099, Why: "at-least-once, acl class: the give-back of an item moved as its take ended, refused by an ACL, was taken for returned by others, and the item stayed in flight under its live consumer (now sent again until allowed)"},
			{Seed: 10313387, Why: "at-most-once, acl class (the test's own judge): the put-back of an item deleted as its take ended found the directory deleted, and its re-creation refused by an ACL on DIR.epoch; it waited to be sent again, as giveback.go says, and the process crashed meanwhile: item-34 lost with the process, which the judge counted only for takes (put-backs under way at a crash now count too)"},
			{Seed: 125238411172969, NoACL: true, NoOutageEnds: true, NoActorLag: true, Why: "liveness (the test's own): a take canceled mid-delete put its item back after every consumer had ended; consumers now wait for Client.Settle"},
			{Seed: 243061626682936, NoACL: true, NoOutageEnds: true, NoActorLag: true, Root: sim.ExploreRoot, Why: "at-most-once: a take whose delete's reply was lost, settled as unknown, ended with an *UnknownTakeError in the job in which its caller's context ended (in-job ends); Client.Take returned the context's error and dropped the error, the item's only report: item-49 lost"},
			{Seed: 59600952, Why: "at-least-once, a restart aimed at a give-back: two takes of one Client moved the same item, both replies lost; one settled first, claimed the copy and, its context ended, gave it back under its own name (reply lost again); the other, settling, found the copy gone and sent its move again, which took the given-back item on its stale read into a copy of the same name, and the first give-back's retry, finding the name taken and that copy there, reported a failure (a take now settles as gone when another take of the Queue claimed the copy)"},
			{Seed: 116802994809109, SyncAfterReconnect: true, Canary: string(bugPutBackAboveAnyIncarnation), Why: "at-most-once, counter classes: a put-back named above a counter that had run out was sent as the (empty) directory was deleted by hand; its create, retried after the NoNode, landed in the directory a put had made again, whose counter starts over, and items put after it were taken first (make test on 6a3b156)"},
		},
	}
	if mode == AtLeastOnce {
		sc.Faults.Allow = sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL)
		sc.Operator = []string{bsimDir + ".consumers/"}
		// A consumer's marker goes only with its own session or by the
		// operator's hand (sim_test.go).
		sc.OwnDeletes = []string{bsimDir + ".consumers"}
		sc.ACL = []string{bsimDir} // and DIR.inflight, DIR.consumers, DIR.epoch: the prefix
		// What a background flow may report: a session's end, and an
		// ack that goes on in the background (Item.Ack: refused by an
		// ACL, then not applied, or its outcome unknown). A give-back or
		// a return reports nothing else: the item is back, or was
		// returned by another.
		sc.Invariants = append(sc.Invariants, sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth, ErrDeliveryLost, ErrOutcomeUnknown))
		// The canaries the seeds name (Regression.Canary) plant
		// at-most-once bugs: this scenario replays the seeds without.
		for i := range sc.Regressions {
			sc.Regressions[i].Canary = ""
		}
	} else {
		sc.Invariants = append(sc.Invariants, sim.InvariantFunc(onlyItemReports))
	}
	return s, sc
}

// bsimConn notes the put-backs of at-most-once items (giveback.go,
// putBack: a create under DIR with the item's data, sent after its Put
// returned; a create a Put still sends as its cancellation reaches it is
// taken for one too, which only excuses that item if its process crashes)
// each process has sent and not yet heard applied.
type bsimConn struct {
	*fakezk.Conn
	s *blockingSim
	i int
}

func (c *bsimConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if m, ok := req.(*task.MultiRequest); ok && c.s.mode == AtLeastOnce && !c.s.aimed && isGiveBack(m) {
		c.Conn.Do(req, done, watch)
		c.s.aimRestart(c.i)
		return
	}
	cr, ok := req.(*task.CreateRequest)
	if !ok || (cr.Mode != task.Persistent && cr.Mode != task.PersistentSequential) || !strings.HasPrefix(cr.Path, bsimDir+"/") {
		c.Conn.Do(req, done, watch)
		return
	}
	it := c.s.items[string(cr.Data)]
	if it == nil || it.inPut {
		c.Conn.Do(req, done, watch)
		return
	}
	it.backOn = c.i + 1
	c.Conn.Do(req, func(resp task.Response) {
		if resp.Err == nil && it.backOn == c.i+1 {
			it.backOn = 0
		}
		done(resp)
	}, watch)
}

// isGiveBack reports whether m is the multi of an at-least-once
// give-back (giveback.go, giveBackTask): the consumer's marker and the
// epoch checked, the item created in DIR, its copy deleted from flight.
// (A take's return of a dead consumer's items creates and deletes the
// dead one's marker first: five ops.)
func isGiveBack(m *task.MultiRequest) bool {
	if len(m.Ops) != 4 {
		return false
	}
	cr, ok1 := m.Ops[2].(*task.CreateRequest)
	dr, ok2 := m.Ops[3].(*task.DeleteRequest)
	return ok1 && ok2 && strings.HasPrefix(cr.Path, bsimDir+"/") && strings.HasPrefix(dr.Path, bsimDir+".inflight/")
}

// aimRestart aims a server restart at the give-back just sent by
// client i, once a seed, in a seed whose plan has the Restart class
// (Trial.AimRestart, drawn from Trial.Rand, which nothing else in this
// scenario draws from): the multi applied in two restarts of three, its
// reply lost, and every client back at once, so that the give-back, sent
// again, finds the item it gave back still queued
// (queue/give-back-exists-fails) unless another consumer's take gets
// there first. A give-back is sent when a take's context ends with its
// move in flight and the move lands (in about one seed in seven); the
// aftermath of an outage cuts it only when an outage ended that take, at
// a write drawn among the client's next four, and a cut of the one
// client lets the consumers of the others, waiting for an item, take the
// one given back before the client is back: left to those, the canary
// was caught about once in a thousand seeds.
func (s *blockingSim) aimRestart(i int) {
	if s.r.FaultsOn() {
		s.aimed = s.r.AimRestart(s.r.Rand, i)
	}
}

// inCreateOrder: at most once, when an item is taken no item created
// before it is in the queue (doc.go, Order: items are taken in the order
// their creates were applied, items put back too), but across an
// incarnation of the directory (none of the old one was left) and
// between two items put back above the counter's range (in the order of
// the items they put back).
func (s *blockingSim) inCreateOrder(r *sim.Trial, i int, got *Item) {
	if st, ok := r.NodeStat(bsimDir); !ok || st.Czxid > got.czxid {
		return
	}
	for _, n := range r.Children(bsimDir) {
		_, seq, ok := parse(n)
		if !ok || exhausted(seq) {
			continue
		}
		if st, ok := r.NodeStat(bsimDir + "/" + n); ok && st.Czxid < got.czxid && (seq <= math.MaxInt32 || got.Seq <= math.MaxInt32) {
			r.Errorf("client %d: took %s while %s, created before it, is in the queue", i, got.Name, n)
		}
	}
}

// crashed: client i's process crashed. The put-backs it had under way
// died with it: at most once, each may have deleted an item no one
// received, as a take that dies with its process may (killedTakes). An
// ACL that refuses the put-back (the directory deleted and closed, so
// that it cannot be made again) keeps one under way for as long as it
// refuses (giveback.go), and a crash meanwhile loses the item; the doc's
// report of an item not put back (UnknownTakeError) needs a process to
// make it.
func (s *blockingSim) crashed(i int) {
	for _, it := range s.items {
		if it.backOn == i+1 {
			it.backOn, it.backDied = 0, true
		}
	}
}

// drained: no item in the queue, and no in-flight copy.
func (s *blockingSim) drained(r *sim.Trial) bool {
	for _, n := range r.Children(bsimDir) {
		if _, _, ok := parse(n); ok {
			return false
		}
	}
	return len(r.Children(bsimDir+".inflight")) == 0
}

// startClient gives client i (its process now: a new consumer) a Client
// and its actors.
func (s *blockingSim) startClient(r *sim.Trial, i int) {
	opts := []Option{WithMode(s.mode)}
	if s.mode == AtMostOnce {
		// A bound the producers reach: a put-back is no put, and the
		// bound must not refuse it.
		opts = append(opts, WithBound(bsimBound))
	}
	c, err := NewClient(r.Execs[i], bsimDir, opts...)
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	r.Go(i, func(a *sim.Actor) {
		for !r.Stopping() && a.Context().Err() == nil {
			s.put(r, a, c)
		}
	})
	for range 2 {
		r.Go(i, func(a *sim.Actor) {
			for a.Context().Err() == nil {
				// Done once the faults stop and the queue is drained,
				// no Put is under way (one held up by a partition may
				// land late) and the Client's takes settled (a take that
				// ended early may still be giving its item back).
				if r.Stopping() && s.drained(r) && s.putting == 0 && s.settle(r, a, c) && s.drained(r) {
					return
				}
				s.take(r, a, c)
			}
		})
	}
}

// settle is c.Settle with the actor's context, judged: true once it
// returned nil.
func (s *blockingSim) settle(r *sim.Trial, a *sim.Actor, c *Client) bool {
	call := sim.BeginCall(r, a, a.Context())
	err := c.Settle(a.Context())
	s.judge(call, callSettle, "", -1, err)
	return err == nil
}

// draw draws where a call's context ends and makes that context (one
// that ends on its own after limit, so that a Take of an empty queue
// returns); the caller ends it with the cancel it returns.
func draw(a *sim.Actor, limit time.Duration) (int, context.Context, context.CancelFunc) {
	rnd := a.Rand()
	end := endNone
	if rnd.IntN(3) > 0 {
		end = 1 + rnd.IntN(numEnds-1)
	}
	ctx, cancel := a.WithTimeout(a.Context(), limit)
	switch end {
	case endBefore:
		cancel()
	case endDuring:
		var c2 context.CancelFunc
		if rnd.IntN(2) == 0 {
			ctx, c2 = a.CancelAfterSteps(ctx, rnd.IntN(16))
		} else {
			ctx, c2 = a.WithTimeout(ctx, time.Duration(rnd.Int64N(int64(time.Second))))
		}
		c1 := cancel
		cancel = func() { c2(); c1() }
	}
	return end, ctx, cancel
}

func ctxEnded(err error) bool {
	return errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrDeadlineExceeded)
}

// The Client's calls, for callRules.
const (
	callPut = iota
	callTake
	callAck
	callSettle
)

var callNames = [...]string{"put", "take", "ack", "settle"}

// callRules are the rules of the Client's calls in mode beyond
// sim.Call's (sim.Call.Judge; the Client doc, the package doc's "What
// each error means"), by call:
//
//   - Put: ErrOutcomeUnknown (its reply lost), ErrFull (at most once: the
//     scenario's queue is bounded), ErrExhausted (a counter run out),
//     task.ErrNoAuth (an operator's ACL), task.ErrSessionExpired (the
//     session ended before its create was sent: a Put does not run
//     again);
//   - Take: task.ErrSessionExpired (a take in progress fails with it),
//     task.ErrNoAuth, and at most once an *UnknownTakeError;
//   - Ack: ErrDeliveryLost, ErrOutcomeUnknown, task.ErrNoAuth (the ack
//     goes on in the background), never a session's end by itself (an
//     ack the session's end stopped says ErrDeliveryLost or
//     ErrOutcomeUnknown);
//   - Settle: nothing but ctx's end.
//
// The queue's own errors are judged first (queueErr): each wraps its
// cause (a connection loss, an expiry, a context's end). Never a
// connection loss or "not sent" by itself: a Put's lost reply is
// ErrOutcomeUnknown, and everything else is retried past them. With a
// context that had ended, Put and Take send nothing, and Ack starts the
// ack in the background.
func callRules(mode Mode) [len(callNames)]sim.CallRules {
	var rules [len(callNames)]sim.CallRules
	for call := range rules {
		rules[call] = sim.CallRules{
			First:     func(err error) (string, bool) { return queueErr(mode, call, err) },
			Expiry:    sim.ExpiryNever,
			ExpiryWhy: "by itself",
			May:       []error{task.ErrNoAuth},
		}
	}
	for _, call := range []int{callPut, callTake} {
		rules[call].Expiry, rules[call].May = sim.ExpiryByMay, []error{task.ErrNoAuth, task.ErrSessionExpired}
	}
	rules[callSettle].May = nil
	return rules
}

// queueErr judges err if it is one of the queue's errors: one call may
// end with in mode, or one it never ends with.
func queueErr(mode Mode, call int, err error) (why string, judged bool) {
	switch {
	case call == callPut && (errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrExhausted) || errors.Is(err, ErrFull) && mode == AtMostOnce),
		call == callTake && mode == AtMostOnce && isUnknownTake(err),
		call == callAck && (errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrDeliveryLost)):
		return "", true
	case errors.Is(err, ErrOutcomeUnknown), errors.Is(err, ErrDeliveryLost), errors.Is(err, ErrExhausted), errors.Is(err, ErrFull):
		return "a queue's error it never ends with", true
	}
	return "", false
}

// isUnknownTake reports whether err is an *UnknownTakeError.
func isUnknownTake(err error) bool {
	var ute *UnknownTakeError
	return errors.As(err, &ute)
}

// judge judges the outcome err of a Client call (c: as it began) made by
// actor a; name (an item's) and end (where its context was drawn to end,
// or -1 for the actor's own context) name the call in a violation.
func (s *blockingSim) judge(c sim.Call, call int, name string, end int, err error) {
	what := callNames[call]
	if name != "" {
		what += " " + name
	}
	if end >= 0 {
		what += " (ctx ends " + endNames[end] + ")"
	} else {
		what += " (with the actor's context)"
	}
	if c.Judge(what, err, s.rules[call]) {
		s.over[call]++
	}
}

// put is one Put of the producer actor a.
func (s *blockingSim) put(r *sim.Trial, a *sim.Actor, c *Client) {
	i, rnd := a.Client(), a.Rand()
	_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(800*time.Millisecond))))
	if r.Stopping() {
		return
	}
	end, ctx, cancel := draw(a, 10*time.Second)
	defer cancel()
	key := fmt.Sprintf("item-%d", s.next)
	s.next++
	it := &bsimItem{}
	s.items[key] = it
	s.keys = append(s.keys, key)
	it.inPut = true
	call := sim.BeginCall(r, a, ctx)
	_, err := s.putOne(ctx, c, key)
	it.inPut = false
	s.judge(call, callPut, key, end, err)
	switch {
	case err == nil:
		it.put = true
		r.Progress(i)
	case errors.Is(err, ErrExhausted), errors.Is(err, ErrFull), errors.Is(err, task.ErrNoAuth):
		it.refused = true
		if it.delivered > 0 {
			r.Errorf("client %d: put %s refused (%v), but it was delivered", i, key, err)
		}
	case call.Over() && !r.Closing():
		// Its ctx had ended: nothing was sent, and the item is never
		// delivered.
		it.refused = true
		if it.delivered > 0 {
			r.Errorf("client %d: put %s with an ended context, but it was delivered", i, key)
		}
	}
}

// putOne is c.Put, counted in s.putting while it runs (also when its
// actor is unwound).
func (s *blockingSim) putOne(ctx context.Context, c *Client, key string) (string, error) {
	s.putting++
	defer func() { s.putting-- }()
	return c.Put(ctx, []byte(key))
}

// takeOne is c.Take, counted in s.killedTakes if the actor's process
// crashes while it runs (the actor is unwound).
func (s *blockingSim) takeOne(ctx context.Context, a *sim.Actor, c *Client) (*Item, error) {
	returned := false
	defer func() {
		if !returned {
			s.killedTakes++
		}
	}()
	it, err := c.Take(ctx)
	returned = true
	return it, err
}

// take is one Take, work, (Ack) of a consumer actor a.
func (s *blockingSim) take(r *sim.Trial, a *sim.Actor, c *Client) {
	i, rnd := a.Client(), a.Rand()
	end, ctx, cancel := draw(a, 3*time.Second)
	defer cancel()
	s.tried[end]++
	call := sim.BeginCall(r, a, ctx)
	got, err := s.takeOne(ctx, a, c)
	s.judge(call, callTake, "", end, err)
	if err != nil {
		var ute *UnknownTakeError
		switch {
		case errors.As(err, &ute):
			if it := s.items[string(ute.Item.Data)]; it != nil {
				it.unknown = true
			}
		case errors.Is(err, task.ErrNoAuth):
			// An operator's ACL refuses the take for a while: nothing
			// taken (a take that may have taken an item says so with
			// UnknownTakeError); try again a little later.
			_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(300*time.Millisecond))))
		}
		return
	}
	key := string(got.Data)
	it := s.items[key]
	switch {
	case it == nil:
		r.Errorf("client %d: took %s (%q), which was never put", i, got.Name, key)
		return
	case it.refused:
		r.Errorf("client %d: took %s (%s), whose put was refused or never sent", i, got.Name, key)
		return
	}
	s.ended[end]++
	it.delivered++
	delivery := it.delivered
	if s.mode == AtLeastOnce {
		copyPath := r.World.ServerPath(got.q.flight(got.cons.id, got.czxid, got.Name))
		moved, ok := s.copies[copyPath]
		if !ok {
			r.Errorf("client %d: took %s (%s), but no move made its in-flight copy %s", i, got.Name, key, copyPath)
			return
		}
		it.movedAt = append(it.movedAt, moved)
	}
	r.Logf("client %d actor %d (ctx ends %s): took %s %s", i, a.ID(), endNames[end], got.Name, key)
	if it.delivered > 1 && s.mode == AtMostOnce {
		r.Errorf("client %d: %s (%s) delivered a second time (at-most-once)", i, key, got.Name)
		return
	}
	if s.mode == AtMostOnce {
		s.inCreateOrder(r, i, got)
	}
	r.Progress(i)
	if s.mode == AtLeastOnce {
		// The doc's pattern: the ack deferred, with the call's context.
		defer func() {
			if end == endGive {
				var gc context.CancelFunc
				ctx, gc = a.CancelAfterSteps(ctx, rnd.IntN(6))
				defer gc()
			}
			it.inAck++
			call := sim.BeginCall(r, a, ctx)
			err := c.Ack(ctx, got)
			it.inAck--
			r.Logf("client %d actor %d: ack %s %s: %v", i, a.ID(), got.Name, key, err)
			s.judge(call, callAck, got.Name, end, err)
			switch {
			case err == nil:
				it.acked++
				s.acks++
				if it.acked > 1 {
					r.Errorf("client %d: %s (%s) acknowledged a second time", i, key, got.Name)
				}
			case errors.Is(err, ErrDeliveryLost):
				it.lostAt = append(it.lostAt, delivery)
			case ctxEnded(err), errors.Is(err, ErrOutcomeUnknown), errors.Is(err, task.ErrSessionExpired), r.Closing(),
				errors.Is(err, task.ErrNoAuth): // an ACL refused it: it goes on in the background
				it.unsure = true
				if ctxEnded(err) && delivery%2 == 1 && a.Context().Err() == nil && !r.Closing() {
					// A caller that tries the Ack again, its first
					// going on in the background: the second must not
					// say "not applied" of an item the first acked.
					s.ackAgain(r, a, c, i, it, got, delivery)
				}
			}
		}()
	}
	switch end {
	case endAfter:
		cancel()
	case endInside:
		var sc context.CancelFunc
		ctx, sc = a.CancelAfterSteps(ctx, rnd.IntN(10))
		defer sc()
	}
	_ = a.Sleep(ctx, time.Duration(rnd.Int64N(int64(time.Second))))
}

// ackAgain is an Ack of got called again with the actor's own context,
// after one whose context ended. Its nil (applied, by it or by the first)
// is not a second acknowledgment; its ErrDeliveryLost says the item is
// back, which noneLost checks.
func (s *blockingSim) ackAgain(r *sim.Trial, a *sim.Actor, c *Client, i int, it *bsimItem, got *Item, delivery int) {
	it.inAck++
	call := sim.BeginCall(r, a, a.Context())
	err := c.Ack(a.Context(), got)
	it.inAck--
	r.Logf("client %d actor %d: ack %s again: %v", i, a.ID(), got.Name, err)
	s.judge(call, callAck, got.Name, -1, err)
	if errors.Is(err, ErrDeliveryLost) {
		it.lostAgain = append(it.lostAgain, delivery)
	}
}

// noneLost: at-least-once, every item whose Put succeeded was
// acknowledged, or an Ack of it returned before its outcome was known;
// an item whose Ack ended with ErrDeliveryLost was delivered again or
// acknowledged.
func (s *blockingSim) noneLost(r *sim.Trial) error {
	if s.mode != AtLeastOnce {
		return s.noneLostAtMostOnce(r)
	}
	for _, k := range s.keys {
		it := s.items[k]
		if !it.put {
			continue
		}
		if it.inAck > 0 {
			it.unsure = true // its actor died inside Ack
		}
		if it.acked == 0 && !it.unsure {
			return fmt.Errorf("%s put, delivered %d times, never acknowledged: lost", k, it.delivered)
		}
		// Back: delivered again by a move applied after the one of that
		// delivery (a take reported late may follow the report of a take
		// of the item put back meanwhile; see movedAt).
		// An Ack called again that said ErrDeliveryLost: the item came
		// back, whatever became of the first Ack.
		for _, d := range it.lostAgain {
			if !slices.ContainsFunc(it.movedAt, func(z int64) bool { return z > it.movedAt[d-1] }) {
				return fmt.Errorf("%s: the ack of its delivery %d, called again after one whose context ended, ended with ErrDeliveryLost (not applied), but it never came back (moved at zxids %d)", k, d, it.movedAt)
			}
		}
		for _, d := range it.lostAt {
			if it.acked == 0 && !it.unsure && !slices.ContainsFunc(it.movedAt, func(z int64) bool { return z > it.movedAt[d-1] }) {
				return fmt.Errorf("%s: the ack of its delivery %d ended with ErrDeliveryLost (not applied), but it never came back (moved at zxids %d)", k, d, it.movedAt)
			}
		}
	}
	return nil
}

// noneLostAtMostOnce: every item put was delivered, or a take reported it
// unknown (UnknownTakeError, returned or sent to OnError), and a report
// sent to OnError for a put-back names a lost connection, an expiry or
// the executor's close as its cause (the doc's one exception: anything
// else, a bound or a counter run out refusing it, is a loss).
func (s *blockingSim) noneLostAtMostOnce(r *sim.Trial) error {
	reported := map[string]error{}
	for _, err := range r.Errs {
		var ute *UnknownTakeError
		var pbe *PutBackError
		switch {
		case errors.As(err, &ute):
			reported[string(ute.Item.Data)] = ute.Err
		case errors.As(err, &pbe):
			reported[string(pbe.Item.Data)] = pbe // refused: the cause below is not one the doc excuses
		}
	}
	var lost []string
	for _, k := range s.keys {
		it := s.items[k]
		if !it.put || it.delivered > 0 || it.unknown || it.backDied {
			continue
		}
		cause, ok := reported[k]
		switch {
		case !ok:
			lost = append(lost, k)
		case !errors.Is(cause, task.ErrConnectionLoss) && !errors.Is(cause, task.ErrSessionExpired) && !errors.Is(cause, task.ErrClosed) &&
			!errors.Is(cause, ErrOutcomeUnknown):
			return fmt.Errorf("%s taken as its take ended and not put back (%v): lost, its outcome known", k, cause)
		}
	}
	if len(lost) > s.killedTakes {
		return fmt.Errorf("%v put, never delivered, reported nowhere: lost (%d takes died with their process)", lost, s.killedTakes)
	}
	return nil
}

// onlyItemReports: at most once, a background flow reports only what
// Take's doc sends to Config.OnError: an item taken as its take ended
// and not put back (*UnknownTakeError, *PutBackError: noneLost judges
// each item's cause), a session's end, or an ACL's refusal.
func onlyItemReports(r *sim.Trial) error {
	for _, err := range r.Errs {
		var ute *UnknownTakeError
		var pbe *PutBackError
		switch {
		case errors.As(err, &ute), errors.As(err, &pbe):
		case errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed), errors.Is(err, task.ErrNoAuth):
		default:
			return fmt.Errorf("reported by an executor: %w", err)
		}
	}
	return nil
}

func (s *blockingSim) report(t *testing.T) {
	t.Helper()
	line := ""
	for e := range numEnds {
		line += fmt.Sprintf(" %s=%d/%d", endNames[e], s.ended[e], s.tried[e])
	}
	t.Logf("%s: takes by where the context ended (delivered/tried):%s; %d acks; calls made with their context ended (put, take, ack): %v", s.mode, line, s.acks, s.over[:callSettle])
}

func TestBlockingSimulation(t *testing.T) {
	for _, mode := range []Mode{AtMostOnce, AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			s, sc := newBlockingSim(mode)
			seeds := 40
			if testing.Short() {
				seeds = 10
			}
			if st := sim.Check(t, sc, seeds); st.Failures() > 0 {
				return
			}
			s.report(t)
			checked := []int{endNone, endAfter}
			if s.over[callPut] == 0 || s.over[callTake] == 0 {
				t.Error("no Put or no Take made with its context ended: the judge of an ended context checks nothing there")
			}
			if mode == AtLeastOnce {
				checked = append(checked, endInside, endGive)
				if s.acks == 0 || s.over[callAck] == 0 {
					t.Error("no ack succeeded, or none was made with its context ended: the scenario checks nothing there")
				}
			}
			for _, e := range checked {
				if s.ended[e] == 0 {
					t.Errorf("no item taken with its context ending %s: the scenario checks nothing there", endNames[e])
				}
			}
		})
	}
}

// The same seed replays the same history, actors included.
func TestSimDeterminism(t *testing.T) {
	for _, mode := range []Mode{AtMostOnce, AtLeastOnce} {
		_, sc := newBlockingSim(mode)
		sim.Determinism(t, sc, sim.Sample(40, 1000))
	}
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, a := newBlockingSim(AtMostOnce)
	_, b := newBlockingSim(AtLeastOnce)
	sim.Explore(t, a, b)
}

// The at-most-once put-back done as a put (refused at the queue's bound or
// a counter run out, and the item lost) is caught by the blocking
// scenario, whose producers fill the queue to its bound and whose takes
// end at every point: the judge finds an item reported with a cause the
// doc does not excuse.
func TestCanaryPutBackAsPut(t *testing.T) {
	restore := canary.Enable(bugPutBackAsPut)
	defer restore()
	_, sc := newBlockingSim(AtMostOnce)
	// Hunted in the histories from before context outages
	// (Scenario.OutageEnds): seeds to catch [100 36 27]; with them the
	// first hunt's catch moves from seed 100 (which now draws them) to
	// 334, past the bound ([334 36 27]).
	sc.OutageEnds = false
	sim.Catch(t, sc, string(bugPutBackAsPut), 3, 300)
}

// queue/put-back-above-counter names every put-back above the counter's
// range, behind items put later: caught by the judge of the order of
// creates at each at-most-once take (inCreateOrder).
func TestCanaryPutBackAboveCounter(t *testing.T) {
	restore := canary.Enable(bugPutBackAboveCounter)
	defer restore()
	_, sc := newBlockingSim(AtMostOnce)
	sim.Catch(t, sc, string(bugPutBackAboveCounter), 3, 300)
}

// The blocking scenarios' seeds that once failed (Scenario.Regressions),
// on every unit run.
func TestBlockingSimRegressions(t *testing.T) {
	for _, mode := range []Mode{AtMostOnce, AtLeastOnce} {
		_, sc := newBlockingSim(mode)
		sim.Regressions(t, sc)
	}
}

// queue/put-back-above-any-incarnation creates a put-back named above a
// counter that had run out in whatever incarnation of the directory is
// there by then: seed 116802994809109 of the at-most-once blocking
// scenario (make test on 6a3b156, counter classes) had the directory,
// empty, deleted by hand as the create was sent; retried after the NoNode
// it landed in the directory a put made again, whose counter starts over,
// and items put after it were taken first. The seed passes with the
// incarnation checked (the epoch, in the create's multi).
func TestCanaryPutBackAboveAnyIncarnation(t *testing.T) {
	restore := canary.Enable(bugPutBackAboveAnyIncarnation)
	defer restore()
	_, sc := newBlockingSim(AtMostOnce)
	sc.SyncAfterReconnect = true // as the seed ran (a synced seed)
	sc.NoBlinks = true           // and before the blink class
	res := sim.RunSeed(sc, 116802994809109, false)
	if res.Err == nil {
		t.Fatal("seed 116802994809109 passes with the bug: the scenario no longer puts an item back above the counter into a directory made again")
	}
	t.Logf("seed 116802994809109: %v", res.Err)
}

// queue/give-back-exists-fails: the give-back of an item moved as its
// take ended, its reply lost and sent again, finds the item it put back
// and reports a failure to Config.OnError; the judge of the reports
// (sim.NoClientErrors) finds the report. The at-least-once blocking
// scenario aims a server restart at a give-back (aimRestart): hunted,
// over 3 hunts from seed 1, 72, 105 and 74 seeds to catch, and 55 more
// hunts from seed 59,100,000 up needed 2 to 117 (median 25); left to the
// random faults, it was caught about once in a thousand seeds. Seed 819
// (its history without the blink class; seed 133 until the scenario's
// Acks were called again after their context ended, 2026-12-07) catches
// it so, no fault aimed: an outage ends a take's context with its move in
// flight, and the aftermath of the outage (fakezk/sim/outage.go) cuts the
// client again at the give-back. The seeds pass with the copy read after
// a NodeExists.
// queue/ack-beside-lost-ack: an Ack whose context ended goes on in the
// background; called again at once (one delivery in two of the
// at-least-once blocking scenario), the second finds the copy gone while
// the first, its reply lost, has not settled, and says ErrDeliveryLost
// for an item the first acknowledged: the item never comes back.
func TestCanaryAckBesideLostAck(t *testing.T) {
	restore := canary.Enable(bugAckBesideLostAck)
	defer restore()
	_, sc := newBlockingSim(AtLeastOnce)
	sim.Catch(t, sc, string(bugAckBesideLostAck), 3, 300)
}

func TestCanaryGiveBackExistsFails(t *testing.T) {
	restore := canary.Enable(bugGiveBackExistsFails)
	defer restore()
	_, sc := newBlockingSim(AtLeastOnce)
	sim.Catch(t, sc, string(bugGiveBackExistsFails), 3, 300)
	sc.NoBlinks = true // the seed's history without the blink class
	res := sim.RunSeed(sc, 819, false)
	if res.Err == nil {
		t.Fatal("seed 819 passes with the bug: the scenario no longer cuts a give-back sent after an outage ended its take")
	}
	t.Logf("seed 819: %v", res.Err)
}

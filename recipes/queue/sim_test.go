package queue_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

const simDir = "/jobs/q"

// dropRate is the chance that the reply to a create, delete or multi is
// lost (the connection drops just after the request is sent, applied or
// not), on top of the faults the seed draws: the lost take and ack
// replies the recipe must settle.
const dropRate = 0.05

// simItem is what the simulation knows of one item (keyed by its data,
// unique per run).
type simItem struct {
	pri         int
	put         int // 0 in flight, 1 put, 2 outcome unknown
	delivered   int
	acked       int
	ackUnknown  bool // an ack ended with ErrOutcomeUnknown
	takeUnknown bool // an at-most-once take ended with UnknownTakeError
	ackSent     bool // an ack was sent (sentAck)
	refused     bool // its put ended with ErrExhausted: never in the queue
	// lostAt: the deliveries whose ack ended with ErrDeliveryLost (not
	// applied: the item is back in the queue, or will be).
	lostAt []int
	// movedAt: per delivery (in the order the takes returned), the zxid
	// of the move that delivered it (its in-flight copy's czxid, from the
	// server's journal): the item came back between two moves of it.
	// Not the incarnation the take read (queue.ItemCzxid): a move deletes
	// the item by name and version, and one sent on a read older than a
	// return of the item (under its own name, at version 0) takes the
	// incarnation returned, in a copy named after the one read.
	movedAt []int64
	// acksPending: acks submitted whose outcome never came (a crash).
	acksPending int
}

// simTotals are summed over seeds, to show the faults bit.
type simTotals struct {
	puts, putUnknown, deliveries, redelivered, acks, ackLost, ackUnknown, takeUnknown, lost int
	// counter faults: counters set near the maximum, directories deleted
	// (the counter restarts), puts refused with ErrExhausted
	nearMax, restarts, refused int
	// noAuth: puts, takes and acks an operator's ACL refused (task.ErrNoAuth)
	noAuth int
}

// queueSim is the queue scenario of one mode: 4 clients, each producing
// items (priorities drawn from -1, 0 and 3) every 0..800ms of simulated
// time and consuming items (at-most-once one at a time; at-least-once
// holding one or two at once, acknowledging each 0..1.5s after its take), under every fault class the
// mode survives, with replies to creates, deletes and multis lost at
// dropRate on top, and faults on the directory's counter (counterFaults):
// its cversion set near int32's maximum, and the empty directory deleted
// by an operator so that its counter restarts, both of which make the
// server hand out names again. Judged by:
//
//   - both modes: every item delivered was put, and not refused (a put
//     that ended with ErrExhausted); an item is never acknowledged twice
//     (at-least-once) and never delivered twice (at-most-once), checked
//     as it happens. Items are known by their data, unique per put, never
//     by their names, which the counter hands out again;
//   - at-most-once: FIFO per priority, in the server's order: when an
//     item is delivered, no item of its priority with a lower sequence
//     number is still in the queue;
//   - once the faults stop and the producers stop, the queue drains
//     (and, at-least-once, every in-flight directory empties);
//   - at-least-once, at the end: every item whose Put succeeded was
//     acknowledged (exactly once), or an ack of it ended with
//     ErrOutcomeUnknown, or an ack of it was sent by a process that
//     crashed before it heard the reply: none lost; and an item whose
//     ack ended with ErrDeliveryLost (not applied) was delivered again
//     after that delivery;
//   - no executor reported an error but a session's end;
//   - at-least-once, from the server's journal (sim.Scenario.OwnDeletes):
//     a consumer's marker is deleted only by its own session's end or
//     the operator, never by another client's session (a return of a
//     dead consumer's items applies only while its marker is gone).
//     The puts' bumps in DIR (ephemeral) are not judged: a put that
//     finds the counter run out deletes every bump, another session's
//     too (withdrawExhausted); nor are items and in-flight copies
//     (persistent), which consumers delete by design.
//
// A crashed process's client starts again with a new Queue (a new
// consumer). The operator (at-least-once only) deletes and re-creates
// consumer markers; items are not operator nodes (deleting one loses it,
// as deleting a task loses it).
type queueSim struct {
	mode    queue.Mode
	clients int
	tot     simTotals

	rand  *rand.Rand
	world *sim.World
	qs    []*queue.Queue
	items map[string]*simItem
	keys  []string // items in put order
	next  int
	// loops: at-least-once, client i's take-and-ack chains (1 or 2: a
	// consumer holds up to two items at once)
	loops []int
	// nearMaxDir: the czxid of the directory whose counter was last set
	// near the maximum
	nearMaxDir int64
	// counterDir, counterAt: the czxid of the directory last seen and its
	// stored cversion then (counterUp)
	counterDir int64
	counterAt  int32
	// acksRefused: acks an operator's ACL refused in this run, each of
	// which goes on in the background (noClientErrors)
	acksRefused int
	// copies: at-least-once, the czxid of each in-flight copy made, by
	// its path on the server (copyJournal); srvInflight is the in-flight
	// directory's server path and "/" ("" before the first Setup)
	copies      map[string]int64
	srvInflight string
}

func newQueueSim(mode queue.Mode) (*queueSim, sim.Scenario) {
	s := &queueSim{mode: mode, clients: 4}
	sc := sim.Scenario{
		Name:     "queue/" + mode.String(),
		Clients:  s.clients,
		Faults:   sim.Faults{Allow: sim.AllFaults&^sim.Of(sim.Operator) | sim.CounterFaults | sim.Of(sim.ACL)},
		Counters: []string{simDir},
		ACL:      []string{simDir}, // and DIR.inflight, DIR.consumers, DIR.epoch: the prefix
		Duration: 20 * time.Second,
		Server:   fakezk.Config{Journal: s.copyJournal},
		Wrap: func(i int, c *fakezk.Conn) task.Conn {
			return &dropConn{Conn: c, s: s}
		},
		Setup: func(r *sim.Trial) error {
			s.rand, s.world = r.Rand, r.World
			s.qs = make([]*queue.Queue, s.clients)
			s.items, s.keys, s.next = map[string]*simItem{}, nil, 0
			s.loops, s.nearMaxDir = make([]int, s.clients), 0
			s.counterDir, s.counterAt, s.acksRefused = 0, 0, 0
			s.copies, s.srvInflight = map[string]int64{}, r.World.ServerPath(simDir+".inflight")+"/"
			for i := range s.clients {
				q, err := queue.New(simDir, queue.WithMode(mode))
				if err != nil {
					return err
				}
				s.qs[i] = q
			}
			return nil
		},
		Workload: func(r *sim.Trial) {
			for i := range s.clients {
				s.loops[i] = 1
				s.produce(r, i)
				s.consume(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) {
			s.qs[i], _ = queue.New(simDir, queue.WithMode(mode)) // a new consumer
			s.loops[i] = 1
			s.produce(r, i)
			s.consume(r, i)
		},
		Quiesce: s.drained,
		Invariants: []sim.Invariant{
			sim.InvariantFunc(s.noneLost),
			sim.InvariantFunc(s.noClientErrors),
		},
	}
	if mode == queue.AtLeastOnce {
		sc.Faults.Allow = sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL)
		sc.Operator = []string{simDir + ".consumers/"}
		// A consumer's marker is deleted only by its own session's end
		// or the operator: a return of a dead consumer's items applies
		// only while its marker does not exist, never deleting a live
		// one's.
		sc.OwnDeletes = []string{simDir + ".consumers"}
		sc.Regressions = []sim.Regression{
			{Seed: 23, ReconnectLag: true, Why: "an ack applied with its reply lost, the session back through a member that had not applied it: the settle read saw the in-flight copy, the ack was sent again and reported ErrDeliveryLost, and the item never came back (the settle reads now follow a sync)"},
			{Seed: 1000001715, NoTwins: true, NoLagWatched: true, NoRestartLag: true, NoACL: true, Why: "crash-restarts at one instant, each new process drawing the dead one's consumer ids (the same executor seed) and retrying each: flows ran at one instant without end; then, with ids unique per session, a return pass reading the marker of every consumer registered (each crashed process leaves one alive until its session expires): the crashes injected during the passes outran them"},
			{Seed: 2384, Root: "/sim/chroot", NoACL: true, Why: "the same: a return pass reading every registered consumer's marker under a storm of crash-restarts"},
			{Seed: 1492, Root: "/sim/chroot", NoACL: true, Why: "an item held in flight since before the directory was deleted and created again went back under its own name, which the restarted counter had given a new item; a take that had read the new item deleted the returned one in its place (delivered twice, the other lost): returns from an earlier directory now take a name the counter never hands out"},
			{Seed: 115, NoACL: true, Why: "the scenario's own counter fault set the directory's counter to 2147483646 after the counter class had run it to its maximum: the counter went down, which no server's does, and handed an item's name out again within one directory; a take whose read of the old item was delayed moved the new item in its place (the old one acknowledged twice, the new one lost): the fault now only raises a counter, as the class does"},
			{Seed: 1000003421, NoTwins: true, NoACL: true, Why: "a return pass reading the marker of every consumer holding items: under a storm of crash-restarts and expiries at one instant, each new process read the markers of every crashed holder, whose sessions live on while no time passes, and the faults injected during the passes outran them"},
			{Seed: 2, Why: "acl class (the test's own judge): an ack refused by an ACL went on in the background, as Item.Ack's doc says, and ended there with ErrOutcomeUnknown (its reply lost, the consumer's marker deleted by the operator), which the doc sends to Config.OnError; the judge took the report for a failure (it now allows one such report per refused ack)"},
			{Seed: 221101166004357, SyncAfterReconnect: true, Why: "the test's own judge: a take applied before a long cut, the consumer's marker replaced by the operator meanwhile and its copy put back and taken by another consumer, whose take returned first; the late take's ack ended with ErrDeliveryLost, and the judge, which counted deliveries in the order the takes returned, found no delivery after it (it then asked for an incarnation made after the one taken; now for a move applied after, see seed 68079765663136)"},
			{Seed: 68079765663136, Root: "/sim/chroot", RemoveWatches: true, Why: "the test's own judge: client 2's ack of an item ended with ErrDeliveryLost (its reply lost, its marker deleted by the operator) and its next registration returned the item under its own name at version 0; client 1's take, which had read the item before client 2 took it, settled its move's lost reply as not applied and sent the move again on that read after a restart, taking the returned incarnation into a copy named after the one read; the judge, which dated deliveries by the incarnation read (queue.ItemCzxid), saw the same one taken twice and the item never back (it now dates each delivery by the move that made its copy, from the server's journal)"},
		}
	}
	return s, sc
}

// copyJournal hears every commit of the server (fakezk.Config.Journal):
// it records the czxid of each in-flight copy made, by its path, so that
// a delivery is dated by the move that made its copy, whatever
// incarnation of the item its take read.
func (s *queueSim) copyJournal(c fakezk.Commit) {
	if s.srvInflight == "" {
		return
	}
	for _, n := range c.Nodes {
		if n.Stat.Czxid == c.Zxid && strings.HasPrefix(n.Path, s.srvInflight) {
			s.copies[n.Path] = c.Zxid
		}
	}
}

// dropConn loses the reply to a create, delete or multi at dropRate.
type dropConn struct {
	*fakezk.Conn
	s *queueSim
}

func (c *dropConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.s.sentAck(req)
	c.Conn.Do(req, done, watch)
	switch req.(type) {
	case *task.GetDataRequest:
		// A read whose reply comes late: the item read may be taken,
		// and its name handed out again, before the take acts on it.
		if c.s.rand != nil && c.s.rand.Float64() < dropRate {
			c.s.world.Server.Delay(c.Conn, time.Duration(c.s.rand.IntN(400))*time.Millisecond)
		}
	case *task.CreateRequest, *task.DeleteRequest, *task.MultiRequest:
		if c.s.rand == nil || c.s.rand.Float64() >= dropRate {
			return
		}
		rnd, srv := c.s.rand, c.s.world.Server
		applied := rnd.IntN(2) == 0
		// Half the lost replies are settled after a reconnect at once,
		// half after the client was cut off for up to 400ms (within its
		// session), while the others go on: a name can be handed out
		// again, or a marker deleted, while the request is in doubt.
		if rnd.IntN(2) == 0 {
			srv.Drop(c.Conn, applied)
		} else {
			srv.Partition(c.Conn, time.Duration(rnd.IntN(400))*time.Millisecond, applied)
		}
		// An operator deleting the marker an ack checks, as the ack is
		// in doubt (at-least-once, whose scenario has the operator).
		if m, ok := req.(*task.MultiRequest); ok && c.s.mode == queue.AtLeastOnce && len(m.Ops) == 2 && rnd.IntN(4) == 0 {
			if ck, ok := m.Ops[0].(*task.CheckRequest); ok {
				_ = c.s.world.Server.AdminDelete(c.s.world.ServerPath(ck.Path))
			}
		}
	}
}

// sentAck notes the items an ack request is sent for (a multi or a
// delete that deletes an in-flight copy), read from the copy's data on
// the server: such an ack may be applied without its client hearing of
// it (its reply lost, its process crashed), so the item is not counted
// lost at the end.
func (s *queueSim) sentAck(req task.Request) {
	if s.world == nil {
		return
	}
	var dels []*task.DeleteRequest
	switch r := req.(type) {
	case *task.DeleteRequest:
		dels = append(dels, r)
	case *task.MultiRequest:
		if len(r.Ops) > 2 {
			return // a take's or a return's multi
		}
		for _, op := range r.Ops {
			if d, ok := op.(*task.DeleteRequest); ok {
				dels = append(dels, d)
			}
		}
	}
	for _, d := range dels {
		if !strings.HasPrefix(d.Path, simDir+".inflight/") {
			continue
		}
		if data, _, ok := s.world.NodeData(d.Path); ok {
			if it := s.items[string(data)]; it != nil {
				it.ackSent = true
			}
		}
	}
}

// produce is client i's producer loop: until the run stops, put an item
// every 0..800ms.
func (s *queueSim) produce(r *sim.Trial, i int) {
	if r.Stopping() {
		return
	}
	q := s.qs[i]
	sim.After(r, r.Execs[i], time.Duration(r.Rand.IntN(800))*time.Millisecond, func() {
		if r.Stopping() || q != s.qs[i] {
			return
		}
		s.counterFaults(r)
		key := fmt.Sprintf("item-%d", s.next)
		s.next++
		pri := []int{0, 0, -1, 3}[r.Rand.IntN(4)]
		it := &simItem{pri: pri}
		s.items[key] = it
		s.keys = append(s.keys, key)
		executor.Submit(r.Execs[i], q.PutPriority([]byte(key), pri), func(_ string, err error) {
			if r.Closing() {
				return
			}
			switch {
			case err == nil:
				it.put = 1
				s.tot.puts++
				r.Progress(i)
			case errors.Is(err, queue.ErrOutcomeUnknown), errors.Is(err, task.ErrSessionExpired):
				it.put = 2
				s.tot.putUnknown++
			case errors.Is(err, queue.ErrExhausted), errors.Is(err, task.ErrNoAuth):
				// ErrNoAuth: an operator's ACL refuses the put for a
				// while (the doc: nothing put).
				it.refused = true
				if errors.Is(err, task.ErrNoAuth) {
					s.tot.noAuth++
				} else {
					s.tot.refused++
				}
				if it.delivered > 0 {
					r.Errorf("client %d: put %s refused (%v), but it was delivered", i, key, err)
				}
			default:
				r.Errorf("client %d: put %s: %v", i, key, err)
				return
			}
			s.produce(r, i)
		})
	})
}

// consume is client i's consumer loop: take an item, check it, (ack it),
// take the next.
func (s *queueSim) consume(r *sim.Trial, i int) {
	q := s.qs[i]
	executor.Submit(r.Execs[i], q.Take(), func(got *queue.Item, err error) {
		if r.Closing() || q != s.qs[i] {
			return
		}
		switch {
		case err == nil:
		case unknownTake(err) != nil:
			ute := unknownTake(err)
			s.tot.takeUnknown++
			if it := s.items[string(ute.Item.Data)]; it != nil {
				it.takeUnknown = true
			}
			s.consume(r, i)
			return
		case errors.Is(err, task.ErrSessionExpired):
			s.consume(r, i)
			return
		case errors.Is(err, task.ErrNoAuth):
			// An operator's ACL refuses the take for a while: nothing
			// taken (the doc; a take that may have taken an item says so
			// with UnknownTakeError). Try again a little later.
			s.tot.noAuth++
			sim.After(r, r.Execs[i], time.Duration(r.Rand.IntN(300))*time.Millisecond, func() {
				if q == s.qs[i] {
					s.consume(r, i)
				}
			})
			return
		default:
			r.Errorf("client %d: take: %v", i, err)
			return
		}
		key := string(got.Data)
		it := s.items[key]
		if it == nil {
			r.Errorf("client %d: took %s (%q), which was never put", i, got.Name, key)
			return
		}
		if it.refused {
			r.Errorf("client %d: took %s (%s), whose put was refused (ErrExhausted)", i, got.Name, key)
			return
		}
		if !r.Stopping() {
			s.counterFaults(r) // the queue is often empty just after a take
		}
		it.delivered++
		delivery := it.delivered
		if s.mode == queue.AtLeastOnce {
			moved, ok := s.copies[r.World.ServerPath(queue.ItemCopy(got))]
			if !ok {
				r.Errorf("client %d: took %s (%s), but no move made its in-flight copy %s", i, got.Name, key, queue.ItemCopy(got))
				return
			}
			it.movedAt = append(it.movedAt, moved)
		}
		s.tot.deliveries++
		r.Logf("client %d took %s %s", i, got.Name, key)
		if it.delivered > 1 {
			s.tot.redelivered++
			if s.mode == queue.AtMostOnce {
				r.Errorf("client %d: %s (%s) delivered a second time (at-most-once)", i, key, got.Name)
				return
			}
		}
		if got.Priority != it.pri {
			r.Errorf("client %d: %s put with priority %d, taken as %s", i, key, it.pri, got.Name)
		}
		r.Progress(i)
		if s.mode == queue.AtMostOnce {
			s.checkFIFO(r, i, got)
			s.consume(r, i)
			return
		}
		if s.loops[i] < 2 && r.Rand.IntN(2) == 0 {
			s.loops[i]++ // take another before this one is acknowledged
			s.consume(r, i)
		}
		sim.After(r, r.Execs[i], time.Duration(r.Rand.IntN(1500))*time.Millisecond, func() {
			if q != s.qs[i] {
				return
			}
			it.acksPending++
			executor.Submit(r.Execs[i], got.Ack(), func(_ task.Unit, err error) {
				if r.Closing() || q != s.qs[i] {
					return
				}
				it.acksPending--
				switch {
				case err == nil:
					it.acked++
					s.tot.acks++
					r.Logf("client %d acked %s %s", i, got.Name, key)
					if it.acked > 1 {
						r.Errorf("client %d: %s (%s) acknowledged a second time", i, key, got.Name)
						return
					}
				case errors.Is(err, queue.ErrOutcomeUnknown):
					it.ackUnknown = true
					s.tot.ackUnknown++
				case errors.Is(err, queue.ErrDeliveryLost):
					it.lostAt = append(it.lostAt, delivery)
					s.tot.ackLost++
				case errors.Is(err, task.ErrNoAuth):
					// An operator's ACL refused the ack (the doc: not
					// applied, the item still this consumer's, the ack
					// going on in the background until the ACL lets it):
					// it is applied then (sentAck saw it sent), or the
					// item comes back if the session ends first.
					s.acksRefused++
					s.tot.noAuth++
					r.Logf("client %d: ack %s %s refused: %v", i, got.Name, key, err)
				default:
					r.Errorf("client %d: ack %s: %v", i, got.Name, err)
					return
				}
				if s.loops[i] > 1 && r.Rand.IntN(2) == 0 {
					s.loops[i]--
					return
				}
				s.consume(r, i)
			})
		})
	})
}

// counterFaults, drawn before each put: the directory's counter set near
// int32's maximum (fakezk's SetCounters: the next creates take its last
// numbers, then it has run out and hands its last number out again), or
// the directory deleted by an operator when it is empty (the next put
// creates it again and its counter restarts at zero, handing out the
// names of items taken before). Both give a name to a new item that an
// item taken, in flight or in doubt had.
func (s *queueSim) counterFaults(r *sim.Trial) {
	s.counterUp(r)
	defer s.counterUp(r)
	switch x := r.Rand.IntN(100); {
	case x < 1:
		// Once per incarnation of the directory, and only upward: a
		// server's counter never goes down, and the counter class
		// (sim.Counters) may have raised it already, past the target.
		if st, ok := r.NodeStat(simDir); ok && st.Czxid != s.nearMaxDir {
			s.nearMaxDir = st.Czxid
			target := math.MaxInt32 - int32(r.Rand.IntN(3))
			if storedCversion(st) < target && r.SetCounters(simDir, st.Version, target) == nil {
				s.tot.nearMax++
				r.Logf("counter of %s set near the maximum", simDir)
			}
		}
	case x < 5:
		if r.Server.AdminDelete(r.ServerPath(simDir)) == nil {
			s.tot.restarts++
			r.Logf("operator deleted the empty %s", simDir)
		}
	}
}

// counterUp checks the simulation itself: within one incarnation of the
// directory its counter never goes down, as a server's never does. A
// fault that lowered it would hand a name out again within one directory
// and fail the queue for what no server does.
func (s *queueSim) counterUp(r *sim.Trial) {
	st, ok := r.NodeStat(simDir)
	if !ok {
		return
	}
	cv := storedCversion(st)
	if st.Czxid == s.counterDir && cv < s.counterAt {
		r.Errorf("simulation: the counter of %s went down from %d to %d within one directory (no server lowers it)", simDir, s.counterAt, cv)
	}
	s.counterDir, s.counterAt = st.Czxid, cv
}

// storedCversion is the counter that names a directory's sequential
// children: clients are shown 2*cversion - numChildren in int32
// arithmetic, and the stored cversion is never negative, so it is that
// sum halved in uint32.
func storedCversion(st task.Stat) int32 {
	return int32((uint32(st.Cversion) + uint32(st.NumChildren)) / 2)
}

// checkFIFO: when an item is delivered (its delete applied), no item of
// its priority with a lower sequence number is in the queue: it was
// created before the delivered one, and in at-most-once mode no item
// comes back once gone.
func (s *queueSim) checkFIFO(r *sim.Trial, i int, got *queue.Item) {
	if st, ok := r.NodeStat(simDir); !ok || st.Czxid > queue.ItemCzxid(got) {
		// The directory was deleted (and created again) since the item
		// was: it had no item left then, so every item in it now was put
		// after the delivered one was taken.
		return
	}
	czxid := queue.ItemCzxid(got)
	for _, n := range r.Children(simDir) {
		p, seq, ok := queue.Parse(n)
		if !ok || p != got.Priority {
			continue
		}
		if seq < got.Seq {
			r.Errorf("client %d: took %s while %s, older and of the same priority, is in the queue", i, got.Name, n)
		}
		// In the order the creates were applied, put-backs too: a
		// put-back is named by the counter (above its range only when
		// it has run out, while no put succeeds; two such are in the
		// order of the items they put back).
		if st, ok := r.NodeStat(simDir + "/" + n); ok && st.Czxid < czxid && (seq <= math.MaxInt32 || got.Seq <= math.MaxInt32) {
			r.Errorf("client %d: took %s while %s, created before it and of the same priority, is in the queue", i, got.Name, n)
		}
	}
}

// noClientErrors: no executor reported an error but a session's end,
// and, at-least-once, the outcome of an ack that went on in the
// background after an ACL refused it: the doc (Item.Ack, task.ErrNoAuth)
// sends a failure there to the executor's Config.OnError, and it can
// only be ErrDeliveryLost or ErrOutcomeUnknown (the item goes back, or
// may have been acknowledged: noneLost judges the item as for any ack
// sent). At most one such report per refused ack.
func (s *queueSim) noClientErrors(r *sim.Trial) error {
	kept := s.acksRefused
	for _, err := range r.Errs {
		switch {
		case errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed):
		case kept > 0 && (errors.Is(err, queue.ErrDeliveryLost) || errors.Is(err, queue.ErrOutcomeUnknown)):
			kept--
		default:
			return fmt.Errorf("reported by an executor: %w", err)
		}
	}
	return nil
}

// drained: no item in the queue, and no in-flight item.
func (s *queueSim) drained(r *sim.Trial) bool {
	for _, n := range r.Children(simDir) {
		if _, _, ok := queue.Parse(n); ok {
			return false
		}
	}
	return len(r.Children(simDir+".inflight")) == 0
}

// noneLost: at-least-once, every item whose put succeeded was
// acknowledged, or an ack of it had an unknown outcome. At-most-once
// counts the items never delivered (taken by a process that crashed or
// whose take's reply was lost).
func (s *queueSim) noneLost(r *sim.Trial) error {
	for _, k := range s.keys {
		it := s.items[k]
		if it.put != 1 {
			continue
		}
		if s.mode == queue.AtMostOnce {
			if it.delivered == 0 && !it.takeUnknown {
				s.tot.lost++
			}
			continue
		}
		if it.acked == 0 && !it.ackUnknown && !it.ackSent {
			return fmt.Errorf("%s put, delivered %d times, never acknowledged: lost", k, it.delivered)
		}
		// ErrDeliveryLost says the ack was not applied and the item is or
		// will be back in the queue: so it is acknowledged in the end, or
		// delivered again (to a process whose ack never reported) by a
		// move applied after the one of that delivery. (Not "delivered
		// after": a take's reply held back by a cut reports it after a
		// take of the item put back meanwhile. Nor "taken as a later
		// incarnation" than the take read: see movedAt.)
		if d, ok := neverBack(it.lostAt, it.movedAt); ok && it.acked == 0 && !it.ackUnknown && it.acksPending == 0 {
			return fmt.Errorf("%s: the ack of its delivery %d ended with ErrDeliveryLost (not applied), but it never came back (%d deliveries, no ack, moved at zxids %d)", k, d, it.delivered, it.movedAt)
		}
	}
	return nil
}

// neverBack returns a delivery of lostAt (numbered from 1) whose move
// (movedAt[d-1]) no delivery by a later move followed.
func neverBack(lostAt []int, movedAt []int64) (int, bool) {
	for _, d := range lostAt {
		if !slices.ContainsFunc(movedAt, func(z int64) bool { return z > movedAt[d-1] }) {
			return d, true
		}
	}
	return 0, false
}

func simSeeds() int {
	if testing.Short() {
		return 40
	}
	return 200
}

// The queue simulation of each mode (see queueSim).
func TestQueueSimulation(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			s, sc := newQueueSim(mode)
			st := sim.Check(t, sc, simSeeds())
			tt := s.tot
			t.Logf("%d puts (%d unknown, %d refused at the counter's end), %d deliveries (%d again), %d acks (%d lost, %d unknown), %d unknown takes, %d put items never delivered; counters set near the maximum %d times, directory deleted %d times; %d refused by an ACL",
				tt.puts, tt.putUnknown, tt.refused, tt.deliveries, tt.redelivered, tt.acks, tt.ackLost, tt.ackUnknown, tt.takeUnknown, tt.lost, tt.nearMax, tt.restarts, tt.noAuth)
			if st.Failures() > 0 {
				return
			}
			if tt.putUnknown == 0 || tt.deliveries == 0 {
				t.Fatal("no put reply was lost or nothing was delivered: the test checks nothing")
			}
			if mode == queue.AtMostOnce && tt.takeUnknown == 0 {
				t.Fatal("no take reply was lost: the test checks nothing")
			}
			if mode == queue.AtLeastOnce && (tt.redelivered == 0 || tt.ackLost == 0) {
				t.Fatal("no item came back to the queue: the test checks nothing")
			}
			if tt.nearMax == 0 || tt.restarts == 0 || tt.refused == 0 {
				t.Fatal("no counter ran out or restarted: the test checks nothing")
			}
		})
	}
}

// The same seed replays the same history.
func TestSimDeterminism(t *testing.T) {
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		_, sc := newQueueSim(mode)
		sim.Determinism(t, sc, sim.Sample(6, 500))
	}
}

// The seeds that once failed (Scenario.Regressions), on every unit run.
func TestSimRegressions(t *testing.T) {
	_, a := newQueueSim(queue.AtMostOnce)
	_, b := newQueueSim(queue.AtLeastOnce)
	sim.Regressions(t, a, b)
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
func TestSimExplore(t *testing.T) {
	_, a := newQueueSim(queue.AtMostOnce)
	_, b := newQueueSim(queue.AtLeastOnce)
	sim.Explore(t, a, b)
}

// unknownTake returns the *queue.UnknownTakeError in err's chain, if any.
func unknownTake(err error) *queue.UnknownTakeError {
	var ute *queue.UnknownTakeError
	if errors.As(err, &ute) {
		return ute
	}
	return nil
}

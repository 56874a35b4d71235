package fakezk

import (
	"errors"

	"github.com/zkflow/zkflow/task"
)

type itemKind uint8

const (
	itemResp  itemKind = iota // a response to done
	itemWatch                 // a watch notification to a request's watch
	itemEvent                 // a session event to Start's events
)

// item is one delivery to a client, queued in the order the session
// observed it.
type item struct {
	kind itemKind
	id   uint64
	done func(task.Response)
	// zdone, if set, replaces done and also gets zxid, the server's last
	// zxid when the item was queued (Conn.Send).
	zdone func(task.Response, int64)
	zxid  int64
	resp  task.Response
	fn    func(task.Event)
	ev    task.Event
}

// enqueue queues it for c. Called with the lock held.
func (s *Server) enqueue(c *Conn, it item) {
	if c == nil || c.dead {
		return
	}
	if c.remote && it.kind == itemWatch && it.ev.Type >= task.EventNodeCreated && it.ev.Type <= task.EventNodeChildrenChanged {
		// A server sends a session one notification per trigger; its
		// client hands it to every watch it concerns (remote.go).
		if c.lastTrig == s.trig {
			return
		}
		c.lastTrig = s.trig
	}
	if c.lagging {
		switch it.kind {
		case itemWatch: // the member sends it as it applies the transaction
			c.catchUp()
		case itemEvent: // the client may come back through another member
			s.endLag(c, it.ev.State.String())
		}
	}
	it.zxid = c.seenZxid()
	if it.kind != itemEvent { // a connect tells the client no zxid
		c.seen = max(c.seen, it.zxid)
		if it.kind != itemResp || it.resp.Err != task.ErrConnectionLoss {
			c.heard = max(c.heard, it.zxid)
		}
	}
	c.inbox = append(c.inbox, it)
	s.markReady(c)
}

func (s *Server) markReady(c *Conn) {
	if !c.inReady && !c.held && c.head < len(c.inbox) {
		c.inReady = true
		s.ready = append(s.ready, c)
	}
}

func (s *Server) unready(i int) {
	c := s.ready[i]
	c.inReady = false
	last := len(s.ready) - 1
	s.ready[i] = s.ready[last]
	s.ready[last] = nil
	s.ready = s.ready[:last]
}

// pop takes c's next item. Called with the lock held.
func (s *Server) pop(c *Conn) item {
	it := c.inbox[c.head]
	c.inbox[c.head] = item{}
	c.head++
	if c.head == len(c.inbox) {
		c.inbox, c.head = c.inbox[:0], 0
	}
	s.traceDeliver(c, &it)
	if c.cfg.Root != "" {
		rooted(c.cfg.Root).deliver(&it) // the trace shows the server's paths
	}
	if c.losses != nil && it.kind == itemResp && errors.Is(it.resp.Err, task.ErrConnectionLoss) {
		*c.losses++
	}
	return it
}

func (it *item) call() {
	switch it.kind {
	case itemResp:
		if it.zdone != nil {
			it.zdone(it.resp, it.zxid)
		} else if it.done != nil {
			it.done(it.resp)
		}
	default:
		if it.fn != nil {
			it.fn(it.ev)
		}
	}
}

// pump delivers, in automatic mode, everything deliverable. Only one
// goroutine pumps at a time: a caller that finds another pumping leaves its
// items to it, so callbacks never run concurrently and never with the lock.
func (s *Server) pump() {
	if s.cfg.Deterministic {
		return
	}
	if s.kick != nil {
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return
	}
	s.drain()
}

// drain delivers until nothing is ready, unless another goroutine is at it;
// then it tells the transports of the links cut meanwhile (Link.OnCut),
// whose deliveries may be held.
func (s *Server) drain() {
	s.mu.Lock()
	if s.pumping {
		s.mu.Unlock()
		return
	}
	s.pumping = true
	for {
		for len(s.ready) > 0 {
			c := s.ready[0]
			it := s.pop(c)
			if c.head >= len(c.inbox) {
				s.unready(0)
			}
			s.mu.Unlock()
			it.call()
			s.mu.Lock()
		}
		if len(s.cuts) == 0 {
			break
		}
		cuts := s.cuts
		s.cuts = nil
		s.mu.Unlock()
		for _, f := range cuts {
			f()
		}
		s.mu.Lock()
	}
	s.pumping = false
	s.mu.Unlock()
}

// Step runs one scheduling decision in deterministic mode: the seed picks
// either a session whose oldest sent request the server applies next, or a
// session whose oldest queued delivery the client receives next (each
// session's order is kept), and, at Config.FaultRate, injects a drawn fault
// first. The delivery's callback runs on the caller's goroutine. Step
// reports false when nothing was left to do. Step and RunUntilIdle must not
// be called from a Conn callback or concurrently with each other.
func (s *Server) Step() bool {
	s.stepMu.Lock()
	defer s.stepMu.Unlock()
	s.mu.Lock()
	if s.cfg.FaultRate > 0 && s.rng.Float64() < s.cfg.FaultRate {
		s.drawFault()
	}
	if s.lagN > 0 && s.rng.IntN(16) == 0 {
		s.drift()
	}
	// The sessions with a request to apply, in connection order, counted
	// and then walked to the one drawn (no list is built: Step runs for
	// every request and every delivery).
	applying := 0
	for _, c := range s.conns {
		if len(c.outbox) > 0 && c.connected {
			applying++
		}
	}
	n := applying + len(s.ready)
	if n == 0 {
		s.mu.Unlock()
		return false
	}
	k := s.rng.IntN(n)
	if k < applying {
		c := s.nthApplying(k)
		// Shifted down rather than resliced, so that the outbox keeps
		// its buffer and sending does not allocate once it has one.
		p := c.outbox[0]
		last := len(c.outbox) - 1
		copy(c.outbox, c.outbox[1:])
		c.outbox[last] = pending{}
		c.outbox = c.outbox[:last]
		s.apply(c, &p, false)
		s.mu.Unlock()
		return true
	}
	k -= applying
	c := s.ready[k]
	it := s.pop(c)
	if c.head >= len(c.inbox) {
		s.unready(k)
	}
	s.mu.Unlock()
	it.call()
	return true
}

// nthApplying returns the k-th (from 0) connection, in connection order,
// with a request to apply. Called with the lock held.
func (s *Server) nthApplying(k int) *Conn {
	for _, c := range s.conns {
		if len(c.outbox) > 0 && c.connected {
			if k == 0 {
				return c
			}
			k--
		}
	}
	panic("fakezk: fewer sessions with requests to apply than counted")
}

// RunUntilIdle steps until nothing is left to apply or deliver (timers not
// yet due are not run: advance the clock for those). It returns the number
// of steps taken. With FaultRate > 0 a drawn partition can leave requests
// waiting for the clock.
func (s *Server) RunUntilIdle() int {
	n := 0
	for s.Step() {
		n++
	}
	return n
}

package fakezk

import (
	"slices"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Faults. Each method is safe to call from any goroutine (not from a Conn
// callback), takes effect at once, and is recorded in the trace. In
// automatic mode what it causes is delivered before it returns. Given a
// nil Conn (SessionConn of a session that is not live yet, or no more),
// each does nothing.

// Drop breaks c's connection and reconnects it at once. Requests in flight
// are applied first if applied is true, or never; the client sees
// ErrConnectionLoss for each either way, then StateSuspended and
// StateConnected (same session).
func (s *Server) Drop(c *Conn, applied bool) {
	if c == nil {
		return
	}
	s.locked(func() {
		s.tracef("fault drop c%d applied=%v", c.num, applied)
		s.partition(c, 0, applied)
	})
}

// Partition cuts c off from the server for d of the server's clock. The
// server expires the session if d exceeds its timeout; the client learns
// of it when the partition heals. A Conn not started yet (an executor's
// Run has not reached it) is cut off too: it connects when d has passed.
func (s *Server) Partition(c *Conn, d time.Duration, applied bool) {
	if c == nil {
		return
	}
	s.locked(func() {
		s.tracef("fault partition c%d for %s applied=%v", c.num, d, applied)
		s.partition(c, d, applied)
	})
}

// Expire expires c's session now, as the session tracker would: its
// ephemerals go, then the client is cut off and, reconnecting, sees its
// watches end (EventNotWatching), StateExpired and a new session.
func (s *Server) Expire(c *Conn) {
	if c == nil {
		return
	}
	s.locked(func() {
		if c.sess == nil || !c.sess.alive {
			return
		}
		s.tracef("fault expire c%d id=%#x", c.num, c.sess.id)
		s.expire(c.sess)
	})
}

// Delay holds every delivery to c for d of the server's clock; what was
// queued and what arrives meanwhile is delivered in order afterwards.
func (s *Server) Delay(c *Conn, d time.Duration) {
	if c == nil {
		return
	}
	s.locked(func() {
		s.tracef("fault delay c%d for %s", c.num, d)
		s.delay(c, d)
	})
}

// delay holds c's deliveries for d. Lock held.
func (s *Server) delay(c *Conn, d time.Duration) {
	if c.holdTimer != nil {
		c.holdTimer.Stop()
	}
	c.held = true
	for i, r := range s.ready {
		if r == c {
			s.unready(i)
			break
		}
	}
	c.holdTimer = s.afterFunc(d, func() {
		c.holdTimer = nil
		if !c.frozen && !c.dead { // a frozen client reads nothing until it thaws
			c.held = false
			s.markReady(c)
		}
	})
}

// Restart stops the server for down of its clock and starts it again with
// its data and sessions (ZooKeeper restores both from its snapshot and
// log): every connection drops (requests in flight not applied), session
// countdowns pause while it is down and start afresh when it is up, the
// container manager stops and starts again with it (its runs then count
// from the restart), and clients reconnect when it is up. While it is
// down nothing listens: a client's dial fails, which is no refusal at the
// handshake (compare LoseQuorum), so however long the restart, a client
// resumes its session.
func (s *Server) Restart(down time.Duration) {
	s.locked(func() {
		s.tracef("fault restart down=%s", down)
		s.stopServer()
		s.notServing = false
		if down <= 0 {
			s.startServer()
			return
		}
		s.timers = append(s.timers, s.afterFunc(down, s.startServer))
	})
}

// LoseQuorum takes the servers' quorum away for d of the clock: they stay
// up but serve no one. Every connection drops (requests in flight not
// applied) and every connect attempt is closed at the handshake, which a
// client cannot tell from a refusal of its zxid (handshake.go): a client
// refused for longer than its session timeout since it last heard from a
// server waives its zxid and keeps presenting its session. Data and
// sessions are kept and session countdowns pause, as with Restart; when
// the quorum is back, clients resume their sessions.
func (s *Server) LoseQuorum(d time.Duration) {
	s.locked(func() {
		s.tracef("fault lose-quorum for %s", d)
		s.stopServer()
		s.notServing = true
		for _, c := range s.conns {
			s.reconnect(c) // refused at the handshake
		}
		if d <= 0 {
			s.startServer()
			return
		}
		s.timers = append(s.timers, s.afterFunc(d, s.startServer))
	})
}

func (s *Server) stopServer() {
	s.down = true
	s.stopReaper()
	for _, c := range s.conns {
		s.disconnect(c, false)
	}
	for _, id := range s.sessionIDs() {
		s.stopExpiry(s.sessions[id])
	}
}

func (s *Server) startServer() {
	if !s.down {
		return
	}
	s.down, s.notServing = false, false
	s.tracef("server up")
	s.startReaper()
	for _, c := range s.conns {
		s.reconnect(c)
	}
	for _, id := range s.sessionIDs() {
		if sess := s.sessions[id]; sess.conn == nil || !sess.conn.connected {
			s.armExpiry(sess)
		}
	}
}

// Wipe loses every server and its data at once (total ensemble loss) and
// starts an empty server: the tree is fresh, the zxid is 0 until new
// transactions (sessions opened, writes) raise it, no session survives.
// As a real server does, it refuses at the handshake (closes the
// connection with no connect response) every client whose last seen zxid
// is above its own, whichever session it presents. A refused client keeps
// trying, presenting its session, until more than its session timeout has
// passed since it last heard from a server; then it presents lastZxid 0,
// is let in, learns that its session expired (EventNotWatching on each
// watch, StateExpired) and sees StateConnected with a new one
// (handshake.go). A client
// that has seen no zxid above the server's (a new one, or an old one once
// the new ensemble's writes have passed what it saw) gets in at once, and
// an old one that does learns its session expired.
func (s *Server) Wipe() {
	s.locked(func() {
		s.tracef("fault wipe")
		s.stopServer()
		for _, id := range s.sessionIDs() {
			sess := s.sessions[id]
			sess.alive = false
			s.unregisterWatches(sess)
			if c := sess.conn; c != nil && c.remote {
				s.forget(c) // its client is told the session expired when it comes back
			}
		}
		clear(s.sessions)
		s.endAllLags("wipe")
		s.tree = newTree()
		s.zxid = 0
		clear(s.dataW)
		clear(s.childW)
		clear(s.pdata)
		clear(s.pchild)
		s.startServer()
	})
}

// SetCounters sets path's data version and its stored cversion (the count
// of child creates that names sequential children; clients see
// 2*cversion - numChildren), as if that many changes had happened: the way
// to start counters near int32's maximum.
// It takes no zxid and fires no watch. It reports ErrNoNode for a missing
// node.
func (s *Server) SetCounters(path string, version, cversion int32) error {
	var err error
	s.locked(func() {
		n := s.tree.nodes[path]
		if n == nil {
			err = task.ErrNoNode
			return
		}
		if s.trace.on {
			s.tracef("fault counters %s version=%d cversion=%d", path, version, cversion)
		}
		n.stat.Version, n.stat.Cversion = version, cversion
		if n.reapable() {
			s.considerReap(n) // an empty container may now have had a child
		}
	})
	return err
}

func (s *Server) locked(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	s.pump()
}

func (s *Server) sessionIDs() []int64 {
	ids := make([]int64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// drawFault injects one fault chosen by the seed. Lock held.
func (s *Server) drawFault() {
	var live []*Conn
	for _, c := range s.conns {
		if c.started && !c.closed {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return
	}
	c := live[s.rng.IntN(len(live))]
	kinds := 4
	if s.cfg.Faults.NoExpire {
		kinds = 3
	}
	switch s.rng.IntN(kinds) {
	case 0:
		applied := s.rng.IntN(2) == 0
		s.tracef("fault drop c%d applied=%v (drawn)", c.num, applied)
		s.partition(c, 0, applied)
	case 1:
		max := s.cfg.Faults.MaxPartition
		if max <= 0 && c.sess != nil {
			max = 3 * c.sess.timeout
		}
		if max <= 0 {
			max = time.Second
		}
		d := time.Duration(s.rng.Int64N(int64(max))) + time.Millisecond
		applied := s.rng.IntN(2) == 0
		s.tracef("fault partition c%d for %s applied=%v (drawn)", c.num, d, applied)
		s.partition(c, d, applied)
	case 2:
		d := time.Duration(s.rng.Int64N(int64(s.cfg.Faults.MaxDelay))) + time.Millisecond
		s.tracef("fault delay c%d for %s (drawn)", c.num, d)
		s.delay(c, d)
	case 3:
		if c.sess != nil && c.sess.alive {
			s.tracef("fault expire c%d id=%#x (drawn)", c.num, c.sess.id)
			s.expire(c.sess)
		}
	}
}

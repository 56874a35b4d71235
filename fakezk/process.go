package fakezk

import (
	"time"

	"github.com/zkflow/zkflow/task"
)

// Faults of the client process rather than of the network: a process that
// dies (Crash) and one that freezes (Freeze). Like the other faults, each
// is safe to call from any goroutine (not from a Conn callback), takes
// effect at once and is recorded in the trace.

// Crash is the death of c's client process with no cleanup: its
// connection breaks (requests in flight applied first if applied is true,
// or never), nothing is delivered to it again (no response, watch or
// session event: the callbacks given to c are never called after Crash
// returns) and it never reconnects. Its session is not closed: the server
// expires it once its timeout has passed without word from the client,
// and its ephemerals live until then, as with a process killed by the
// operating system. A new process connects with a new Conn.
func (s *Server) Crash(c *Conn, applied bool) {
	if c == nil {
		return
	}
	s.locked(func() {
		if c.closed || c.dead || !c.started {
			return
		}
		s.tracef("fault crash c%d applied=%v", c.num, applied)
		c.frozen = false // a frozen process can die too; its countdown runs on
		s.disconnect(c, applied)
		c.dead, c.netDown, c.held = true, true, true
		for _, t := range []*task.Timer{&c.heal, &c.holdTimer, &c.thaw, &c.retry} {
			if *t != nil {
				(*t).Stop()
				*t = nil
			}
		}
		for i, r := range s.ready {
			if r == c {
				s.unready(i)
				break
			}
		}
		clear(c.inbox)
		c.inbox, c.head = nil, 0
		if c.sess != nil && c.sess.alive {
			s.armExpiry(c.sess) // no-op if the drop already started it
		}
	})
}

// Freeze pauses c's client process for d of the server's clock (a long
// garbage-collection pause, a stopped virtual machine): the server hears
// nothing from it, so the session's expiry countdown starts at once even
// though the connection stays open, and nothing is delivered to it (what
// arrives is held, in order). Requests it sent before freezing are still
// applied. When d has passed the process reads what was held: if the
// session expired meanwhile, the server had closed the connection, and
// the client sees, after the held deliveries, connection loss for what
// was in flight, StateSuspended, then StateExpired and a new session as
// for any expiry; otherwise it goes on with the same session. A frozen
// Conn does not reconnect (drops and partitions during the freeze take
// effect when it thaws). The caller freezes the process itself (in sim,
// its executor is not stepped) for the same d.
func (s *Server) Freeze(c *Conn, d time.Duration) {
	if c == nil {
		return
	}
	s.locked(func() {
		if c.closed || c.dead || !c.started {
			return
		}
		s.tracef("fault freeze c%d for %s", c.num, d)
		if c.connected && !c.frozen {
			c.lastContact = s.clock.Now() // it hears nothing from now on
		}
		c.frozen, c.held = true, true
		for i, r := range s.ready {
			if r == c {
				s.unready(i)
				break
			}
		}
		if c.sess != nil && c.sess.alive {
			s.armExpiry(c.sess) // no pings from now on
		}
		if c.thaw != nil {
			c.thaw.Stop()
		}
		c.thaw = s.afterFunc(d, func() {
			c.thaw = nil
			c.frozen = false
			s.tracef("c%d thawed", c.num)
			if c.holdTimer == nil { // else a Delay still holds its deliveries
				c.held = false
				s.markReady(c)
			}
			if c.connected && c.sess.alive {
				s.stopExpiry(c.sess) // its pings resume in time
				return
			}
			s.reconnect(c)
		})
	})
}

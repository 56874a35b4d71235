package fakezk

import (
	"time"

	"github.com/zkflow/zkflow/task"
)

// The connect handshake, and what a client does when it is refused.
//
// A ZooKeeper server refuses a client whose connect request carries a
// lastZxidSeen above the server's last processed zxid: it closes the
// connection without a connect response (ZooKeeperServer.
// processConnectRequest: "Refusing session request for client ... as it
// has seen zxid ... our last zxid is ..."), whether the request names a
// session or asks for a new one. That happens when every server lost its
// data (Wipe): the client saw zxids the new ensemble has not reached. A
// server that is up but not serving (LoseQuorum) closes the connection at
// the handshake too, and on the wire the client cannot tell the two apart.
// A server that is down (Restart) accepts no connection at all: the dial
// fails, which is no refusal at the handshake.
//
// The client's rule, the one zkadapter follows: when every connect attempt
// has been refused at the handshake for longer than the negotiated session
// timeout since the client last heard from a server, it stops presenting
// its session and lastZxid and asks for a fresh session (session id 0,
// lastZxid 0). After a whole session timeout with no server accepting it,
// its session is expired at any server that is serving, and a server that
// accepts a fresh session while refusing its zxid has lost the data it
// saw. The old session is reported as after any expiry (EventNotWatching
// on each watch, StateExpired) when the client gives it up, and
// StateConnected follows with the new session once a server accepts it; a
// fresh request refused too (nothing is serving) is tried again, fresh.
// (Giving up can abandon a session the server still keeps, if the servers
// were not serving for longer than the timeout and then came back with
// their data; that session then expires at the server a timeout after it
// is serving again, its ephemerals with it, as a crashed process's would.
// Until then StateExpired does not mean the session's ephemerals are gone:
// a recipe that rejoins at once meets its own old nodes. fakezk/sim draws
// Wipe, which ends every session, and not LoseQuorum.)
//
// A refused client tries again every refusedRetry of the server's clock,
// as go-zookeeper pauses a second after trying every server of its list;
// the attempt that finds it refused for longer than its timeout since its
// last contact asks for a fresh session. Attempts are made on the
// server's clock and under its lock, so deterministic mode stays
// deterministic. Each refusal and each decision is a trace line.

// refusedRetry is how long a client refused at the handshake waits before
// its next attempt.
const refusedRetry = time.Second

// handshake is one connect attempt of c, which is not connected and free
// to connect (not cut off, frozen, closed or dead). It reports whether the
// server takes the connect request; if not, c tries again later. Lock
// held.
func (s *Server) handshake(c *Conn) bool {
	s.stopRetry(c)
	if c.refused && c.sess != nil {
		if since := s.clock.Now().Sub(c.lastContact); since > c.sess.timeout {
			s.giveUp(c, since)
		}
	}
	var why string
	switch {
	case s.down && !s.notServing:
		// Nothing listens: the dial fails, no handshake. startServer
		// makes the next attempt; a client with a decision pending
		// keeps its clock going.
		s.retryLater(c)
		return false
	case s.down:
		why = "the server is not serving"
	case c.lastZxid > s.zxid:
		why = "lastZxid above the server's"
	default:
		c.refused = false
		return true
	}
	c.refused = true
	var id int64
	if c.sess != nil {
		id = c.sess.id
	}
	s.tracef("c%d connect refused: session=%#x lastZxid=%d zxid=%d: %s", c.num, id, c.lastZxid, s.zxid, why)
	s.retryLater(c)
	return false
}

// giveUp is the client's decision to stop presenting its session and
// lastZxid, refused at the handshake for since, longer than its timeout,
// since it last heard from a server. The session is reported expired at
// once; the next attempt asks for a fresh one. Lock held.
func (s *Server) giveUp(c *Conn, since time.Duration) {
	old := c.sess
	s.tracef("c%d gives up session %#x: refused at the handshake, %s since its last contact, timeout %s; asks for a fresh session",
		c.num, old.id, since, old.timeout)
	if old.conn == c {
		old.conn = nil
	}
	if old.alive {
		// The server keeps the session until it expires; the client
		// will never hear from its watches again.
		s.unregisterWatches(old)
	}
	s.notWatching(c, old, task.StateExpired)
	c.sessionEvent(task.StateExpired)
	c.sess = nil
	c.lastZxid = 0
}

// retryLater arms c's next connect attempt, if c has a session it may have
// to give up: a client with no session to present waits for the server
// (startServer, a healed partition, a thaw) to be asked again. Lock held.
func (s *Server) retryLater(c *Conn) {
	if !c.refused || c.sess == nil || c.retry != nil {
		return
	}
	c.retry = s.afterFunc(refusedRetry, func() {
		c.retry = nil
		s.reconnect(c)
	})
}

func (s *Server) stopRetry(c *Conn) {
	if c.retry != nil {
		c.retry.Stop()
		c.retry = nil
	}
}

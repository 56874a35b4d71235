package fakezk

import (
	"errors"
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
// its lastZxid (it sends 0) and goes on presenting its session. A server
// that lost its data does not know the session either and answers that it
// expired: the client reports StateExpired (EventNotWatching on each
// watch first) and then StateConnected with a new session, as after any
// expiry. A server that was only not serving (LoseQuorum) and is serving
// again with its data resumes the session. Either way the session ends
// only when a server says so, so StateExpired still means its ephemerals
// are gone: the client never abandons a session the servers keep.
//
// A refused client tries again every refusedRetry of the server's clock,
// as go-zookeeper pauses a second after trying every server of its list;
// the attempt that finds it refused for longer than its timeout since its
// last contact sends lastZxid 0. Attempts are made on the
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
	if c.refused && c.sess != nil && !c.waived {
		if since := s.clock.Now().Sub(c.lastContact); since > c.sess.timeout {
			s.giveUp(c, since)
		}
	}
	if o := c.obs; o != nil {
		var id int64
		if c.sess != nil {
			id = c.sess.id
		}
		o.OnConn(task.ConnEvent{Kind: task.ConnAttempt, Session: id})
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
	case !c.waived && c.lastZxid > s.zxid:
		why = "lastZxid above the server's"
	default:
		c.refused, c.waived = false, false
		return true
	}
	c.refused = true
	var id int64
	if c.sess != nil {
		id = c.sess.id
	}
	z := c.lastZxid
	if c.waived {
		z = 0
	}
	if s.trace.on {
		s.tracef("c%d connect refused: session=%#x lastZxid=%d zxid=%d: %s", c.num, id, z, s.zxid, why)
	}
	if o := c.obs; o != nil {
		o.OnConn(task.ConnEvent{Kind: task.ConnHandshakeFailed, Session: id, Err: errors.New("fakezk: connect refused: " + why)})
	}
	s.retryLater(c)
	return false
}

// giveUp is the client's decision to stop presenting its lastZxid,
// refused at the handshake for since, longer than its timeout, since it
// last heard from a server. It goes on presenting its session: only the
// server decides that it expired. Its lastZxid is kept for SetWatches
// (the changes its watches missed are those after it). Lock held.
func (s *Server) giveUp(c *Conn, since time.Duration) {
	s.tracef("c%d waives lastZxid %d: refused at the handshake, %s since its last contact, timeout %s; presents session %#x with lastZxid 0",
		c.num, c.lastZxid, since, c.sess.timeout, c.sess.id)
	c.waived = true
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

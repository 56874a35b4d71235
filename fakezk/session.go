package fakezk

import (
	"slices"
	"time"

	"github.com/zkflow/zkflow/task"
)

// session is the server's side of a ZooKeeper session. It outlives
// connections: a Conn that drops and comes back within the timeout finds it,
// with its ephemerals and watches.
type session struct {
	id         int64
	seq        int64 // creation order
	timeout    time.Duration
	conn       *Conn
	alive      bool
	ephemerals map[string]struct{}
	watches    []*watch  // registration order; fired ones are dropped lazily
	compactAt  int       // compact watches when the list reaches this length
	withheld   int       // watches with withheld set
	pwatches   []*pwatch // persistent watches the client holds (pwatch.go)
	expiry     task.Timer
}

// createSession is ZooKeeper's createSession transaction: it takes a zxid.
func (s *Server) createSession(c *Conn) *session {
	s.zxid++
	sess := &session{
		id:         s.sessIDs.take(),
		seq:        s.sessSeq,
		timeout:    s.NegotiateTimeout(c.cfg.Timeout),
		conn:       c,
		alive:      true,
		ephemerals: map[string]struct{}{},
	}
	s.sessSeq++
	s.sessions[sess.id] = sess
	s.journal(s.zxid, sess.id)
	if s.trace.on {
		s.tracef("session open c%d id=%#x timeout=%s zxid=%d", c.num, sess.id, sess.timeout, s.zxid)
	}
	return sess
}

// closeSession is ZooKeeper's closeSession transaction, used for Close and
// for expiry: one zxid; the ephemerals go (in path order, firing watches of
// other sessions); the session's own watches leave the watch tables.
func (s *Server) closeSession(sess *session, why string) {
	if !sess.alive {
		return
	}
	s.zxid++
	tx := &txn{zxid: s.zxid, session: sess.id, now: s.nowMillis()}
	paths := make([]string, 0, len(sess.ephemerals))
	for p := range sess.ephemerals {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if s.trace.on {
		s.tracef("session %s id=%#x zxid=%d ephemerals=%v", why, sess.id, s.zxid, paths)
	}
	for _, p := range paths {
		if n := s.tree.nodes[p]; n != nil {
			s.removeNode(tx, n)
		}
	}
	sess.alive = false
	delete(s.sessions, sess.id)
	s.stopExpiry(sess)
	s.unregisterWatches(sess)
	s.commit(tx)
	if c := sess.conn; c != nil && c.remote {
		s.forget(c) // its client never resumes it: off the server's list
	}
}

// armExpiry starts the session's expiry countdown: the server stops hearing
// from a session when its connection drops.
func (s *Server) armExpiry(sess *session) { s.armExpiryIn(sess, sess.timeout) }

// armExpiryIn is armExpiry with d of the countdown left: none left, the
// session expires now.
func (s *Server) armExpiryIn(sess *session, d time.Duration) {
	if !sess.alive || sess.expiry != nil || s.down {
		return
	}
	if d <= 0 {
		s.expire(sess)
		return
	}
	sess.expiry = s.afterFunc(d, func() {
		sess.expiry = nil
		if sess.alive && !s.down {
			s.expire(sess)
		}
	})
}

func (s *Server) stopExpiry(sess *session) {
	if sess.expiry != nil {
		sess.expiry.Stop()
		sess.expiry = nil
	}
}

// expire ends sess as the session tracker does. A connected client is cut
// off and, reconnecting, learns of the expiry; a disconnected one learns it
// when it comes back.
func (s *Server) expire(sess *session) {
	c := sess.conn
	s.closeSession(sess, "expired")
	if c != nil && c.sess == sess && c.connected {
		s.disconnect(c, false)
		s.reconnect(c)
	}
}

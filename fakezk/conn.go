package fakezk

import (
	"errors"
	"time"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// Conn is one client's connection to a Server: a task.Conn. Its callbacks
// (events, done, watch) are never called concurrently with each other or
// with the server's lock held. In automatic mode they run on the goroutine
// that caused them (inside Do, Close, a fault method or a clock timer, or
// on another goroutine that is already delivering); in deterministic mode
// on the goroutine that calls Server.Step. Per session they arrive in zxid
// order, and, as a real server sends them, the notifications a write
// triggers for its own session arrive before that write's response. (The
// task.Conn contract says the opposite; ZooKeeper and zkadapter do this,
// and the fake reproduces ZooKeeper.)
//
// After an expiry the Conn opens a new session by itself, as go-zookeeper
// does: the client sees EventNotWatching on every watch, StateExpired, then
// StateConnected with the new session's id. A Conn whose connect attempts
// are all refused at the handshake for longer than its session timeout
// presents lastZxid 0 from then on, and its session as before: a server
// that lost its data answers that the session expired, reported as above
// (handshake.go).
type Conn struct {
	srv *Server
	num int
	cfg ConnConfig
	obs *task.Observer // nil, or ConnConfig.Observer with every field set

	// Guarded by srv.mu.
	events     func(task.Event)
	started    bool
	closed     bool
	connected  bool // transport up and session usable
	netDown    bool // partitioned from the server
	heal       task.Timer
	sess       *session
	who        *principal // the ids the connection proves (ConnConfig.Auth, IP)
	lastZxid   int64
	nextID     uint64
	outbox     []pending // sent, not applied (deterministic mode)
	inbox      []item    // applied, not delivered
	head       int
	inReady    bool
	held       bool
	holdTimer  task.Timer
	followed   int64         // the session the client has taken as current (Follow)
	frozen     bool          // the client process is paused (Freeze): it sends and reads nothing
	thaw       task.Timer    // ends the freeze
	dead       bool          // the client process is gone (Crash): nothing is delivered to it
	remote     bool          // served over a network transport (remote.go)
	linked     bool          // remote: a transport link is attached
	link       uint64        // remote: the current link's number
	cut        func()        // remote: the current link's Link.OnCut hook
	lastTrig   uint64        // remote: the trigger of the last notification queued
	lagging    bool          // its member lags behind the leader (lag.go)
	view       int64         // lagging: the last zxid its member applied
	lagEnd     task.Timer    // ends the lag
	pendingLag time.Duration // Lag before Start: the first session lags this long
	// reconnectLag: LagAtReconnect, the next reconnect on the session
	// lags this long.
	reconnectLag  time.Duration
	reconnectHeld bool
	// newSessionLag: LagAtNewSession, the next new session (after an
	// expiry) lags this long.
	newSessionLag  time.Duration
	newSessionHeld bool
	// heard is seen without the replies a cut lost (a connection loss
	// tells the client no zxid): the view of LagAtReconnect's member.
	heard int64
	// deferred: the notifications SetWatches owes a session back through
	// a lagging member, for changes that member has not applied yet; it
	// sends them as it applies them (lag.go, fireDeferred).
	deferred []deferredWatch
	lagHeld  bool  // the lag does not drift (LagHeld)
	seen     int64 // the highest zxid queued to it (a Lag starts no lower)
	losses   *int  // CountLosses

	// The handshake (handshake.go).
	lastContact time.Time  // when the client last heard from a server, if it is not hearing now
	heardAt     time.Time  // remote: when the server last heard from the client (Link.Heard)
	refused     bool       // its last connect attempt was closed at the handshake
	waived      bool       // it presents lastZxid 0 (handshake.go)
	retry       task.Timer // its next connect attempt after a refusal
}

var errStarted = errors.New("fakezk: Start called twice")

// Start opens the session and reports StateConnected to events. It fails
// with an error wrapping task.CodeAuthFailed, opening no session, when
// ConnConfig.Auth holds a credential of a scheme the server does not know.
func (c *Conn) Start(events func(task.Event)) error {
	s := c.srv
	who, err := newPrincipal(c.cfg.IP, c.cfg.Auth)
	if err != nil {
		return err
	}
	grantSuper(who, s.cfg.SuperDigest)
	s.mu.Lock()
	if c.started {
		s.mu.Unlock()
		return errStarted
	}
	c.who = who
	c.started = true
	c.events = events
	if c.closed {
		s.mu.Unlock()
		return task.ErrClosed
	}
	if !s.down && !c.netDown { // partitioned before its start: it heals
		c.establish()
	}
	s.mu.Unlock()
	s.pump()
	return nil
}

// establish opens a new session for c and reports it. Lock held.
func (c *Conn) establish() {
	s := c.srv
	c.sess = s.createSession(c)
	c.connected = true
	c.lastZxid = s.zxid
	c.refused, c.waived = false, false
	if o := c.obs; o != nil {
		o.OnConn(task.ConnEvent{Kind: task.ConnEstablished, Session: c.sess.id})
	}
	s.enqueue(c, item{kind: itemEvent, fn: c.events, ev: task.Event{
		Type: task.EventNone, State: task.StateConnected, SessionID: c.sess.id, Timeout: c.sess.timeout,
	}})
	if d := c.pendingLag; d > 0 { // Lag before Start, after the event (which would end it)
		c.pendingLag = 0
		s.startLag(c, d)
	}
}

func (c *Conn) sessionEvent(st task.State) {
	c.srv.enqueue(c, item{kind: itemEvent, fn: c.events, ev: task.Event{Type: task.EventNone, State: st}})
}

// Do sends req. In automatic mode the server applies it before Do returns;
// in deterministic mode a later Step does.
func (c *Conn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.do(0, req, done, nil, watch)
}

// Send is Do for a transport (remote.go): done also gets the server's last
// zxid when the response was queued, which a reply header carries.
func (c *Conn) Send(req task.Request, done func(resp task.Response, zxid int64), watch func(task.Event)) {
	c.do(0, req, nil, done, watch)
}

// bugServeReplacedLink: a request read from a link that Resume has
// replaced is applied (after the new link's requests): switched on by the
// wire simulation's canary test.
const bugServeReplacedLink canary.Name = "fakezk/serve-replaced-link"

// do sends req; link, if not 0, is the number of the transport link it
// was read from (Link.Send): a request of a link that is no longer the
// session's current one is dropped, unapplied and unanswered.
func (c *Conn) do(link uint64, req task.Request, done func(task.Response), zdone func(task.Response, int64), watch func(task.Event)) {
	s := c.srv
	s.mu.Lock()
	if link != 0 && c.link != link && !canary.On(bugServeReplacedLink) {
		s.tracef("c%d request %s %s from a replaced link dropped", c.num, req.OpName(), req.NodePath())
		s.mu.Unlock()
		return
	}
	c.nextID++
	var err error
	if c.remote {
		// No client checked it: the server makes its own checks
		// (remoteCheck), which are not the client's.
		err = s.remoteCheck(req)
	} else {
		err = reqcheck.Validate(req, s.cfg.MaxDataSize)
	}
	if root := rooted(c.cfg.Root); root != "" && err == nil {
		// Client side, as ZooKeeper's client does it: the server sees
		// full paths; pop strips the root from what the callbacks get
		// (chroot.go).
		req = root.request(req)
	}
	// On the stack unless it has to wait in the outbox.
	p := pending{id: c.nextID, req: req, done: done, zdone: zdone, watch: watch}
	if err == nil && s.cfg.MaxPacketSize > 0 && packetSize(req) > s.cfg.MaxPacketSize {
		err = reqcheck.PacketTooLarge(packetSize(req), s.cfg.MaxPacketSize)
	}
	if err != nil {
		if c.remote && isWrite(req) {
			// A server finds the fault itself (PrepRequestProcessor)
			// and logs the request as an error txn: it takes a zxid.
			s.zxid++
			var id int64
			if c.sess != nil {
				id = c.sess.id
			}
			s.journal(s.zxid, id)
		}
		s.tracef("c%d send #%d rejected: %v", c.num, p.id, err)
		s.enqueue(c, item{kind: itemResp, id: p.id, done: done, zdone: zdone, resp: task.Response{Err: err}})
	} else {
		s.traceSend(c, &p)
		switch {
		case c.closed:
			s.enqueue(c, item{kind: itemResp, id: p.id, done: done, zdone: zdone, resp: task.Response{Err: task.ErrClosed}})
		case !c.connected:
			s.enqueue(c, item{kind: itemResp, id: p.id, done: done, zdone: zdone, resp: task.Response{Err: task.ErrNotSent}})
		case c.followed != 0 && c.sess.id != c.followed:
			if s.trace.on {
				s.tracef("c%d send #%d refused: session %x, client follows %x", c.num, p.id, c.sess.id, c.followed)
			}
			s.enqueue(c, item{kind: itemResp, id: p.id, done: done, zdone: zdone, resp: task.Response{Err: task.ErrSessionExpired}})
		case s.cfg.Deterministic:
			c.outbox = append(c.outbox, p)
		default:
			s.apply(c, &p, false)
		}
	}
	s.mu.Unlock()
	s.pump()
}

// Close ends the session (when the server can be reached; otherwise it
// expires later, as with a real server), completes pending requests with
// ErrClosed and watches with EventNotWatching, then reports StateClosed.
func (c *Conn) Close() error {
	s := c.srv
	s.mu.Lock()
	if c.closed {
		s.mu.Unlock()
		return nil
	}
	c.closed = true
	s.tracef("c%d close", c.num)
	for _, p := range c.outbox {
		s.enqueue(c, item{kind: itemResp, id: p.id, done: p.done, zdone: p.zdone, resp: task.Response{Err: task.ErrClosed}})
	}
	c.outbox = nil
	if c.heal != nil {
		c.heal.Stop()
		c.heal = nil
	}
	s.stopRetry(c)
	if sess := c.sess; sess != nil {
		if c.connected {
			s.closeSession(sess, "closed")
		}
		sess.conn = nil
		s.notWatching(c, sess, task.StateClosed)
	}
	c.connected = false
	if c.started {
		c.sessionEvent(task.StateClosed)
	}
	s.mu.Unlock()
	s.pump()
	return nil
}

// Follow implements task.SessionFollower: from now on, requests made while
// c's session is not session fail with task.ErrSessionExpired, unsent.
func (c *Conn) Follow(session int64) {
	c.srv.mu.Lock()
	c.followed = session
	c.srv.mu.Unlock()
}

// CountLosses has c add one to *n for each response with connection loss
// (task.ErrConnectionLoss) it delivers from now on, as it calls the
// request's callback; nil stops the count. A test that provokes lost
// replies counts them so, without wrapping every request's callback.
func (c *Conn) CountLosses(n *int) {
	c.srv.mu.Lock()
	c.losses = n
	c.srv.mu.Unlock()
}

// Server returns the server c connects to.
func (c *Conn) Server() *Server { return c.srv }

// Clock returns the server's clock. An executor given this Conn and no
// Clock of its own runs on it, so that its timers and the server's agree.
func (c *Conn) Clock() task.Clock { return c.srv.clock }

// SessionID returns the id of c's current session (0 before Start).
func (c *Conn) SessionID() int64 {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.sess == nil {
		return 0
	}
	return c.sess.id
}

// Connected reports whether c currently has a usable session.
func (c *Conn) Connected() bool {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.connected
}

// disconnect cuts c from the server: requests in flight are applied (if
// applyInFlight) or not, and fail with ErrConnectionLoss either way; the
// client sees StateSuspended; the server starts the session's expiry
// countdown. Lock held.
func (s *Server) disconnect(c *Conn, applyInFlight bool) {
	if !c.connected {
		return
	}
	c.connected = false
	if !c.frozen { // a frozen client stopped hearing when it froze
		c.lastContact = s.clock.Now()
	}
	out := c.outbox
	c.outbox = nil
	for i := range out {
		p := &out[i]
		if applyInFlight && c.sess.alive {
			s.apply(c, p, true)
		} else {
			if s.trace.on {
				s.tracef("c%d lost #%d unapplied", c.num, p.id)
			}
			s.enqueue(c, item{kind: itemResp, id: p.id, done: p.done, zdone: p.zdone, resp: task.Response{Err: task.ErrConnectionLoss}})
		}
	}
	if c.outbox == nil { // the outbox keeps its buffer for the next sends
		clear(out)
		c.outbox = out[:0]
	}
	c.sessionEvent(task.StateSuspended)
	if c.remote {
		s.cutLink(c)
		s.dropLinkWatches(c)
	}
	s.persistentState(c, c.sess, task.Event{Type: task.EventNone, State: task.StateSuspended})
	if c.sess.alive {
		if c.remote {
			// A real server counts the session's timeout from the last
			// packet it heard, not from the connection's end.
			s.armExpiryIn(c.sess, c.sess.timeout-s.clock.Now().Sub(c.heardAt))
		} else {
			s.armExpiry(c.sess)
		}
	}
}

// reconnect brings c back if the network and the server allow and the
// handshake is not refused (handshake.go): the same session if it lives
// (its watches re-checked as SetWatches does), else the expiry is reported
// and a new session opened. Lock held.
func (s *Server) reconnect(c *Conn) {
	if c.closed || c.dead || c.connected || c.netDown || c.frozen || !c.started || (c.remote && !c.linked) {
		return
	}
	if !s.handshake(c) {
		return
	}
	sess := c.sess
	if sess != nil && sess.alive {
		s.stopExpiry(sess)
		c.connected = true
		if s.trace.on {
			s.tracef("c%d reconnected id=%#x", c.num, sess.id)
		}
		if o := c.obs; o != nil {
			o.OnConn(task.ConnEvent{Kind: task.ConnEstablished, Session: sess.id, Reconnect: true})
		}
		s.enqueue(c, item{kind: itemEvent, fn: c.events, ev: task.Event{
			Type: task.EventNone, State: task.StateConnected, SessionID: sess.id, Timeout: sess.timeout,
		}})
		s.persistentState(c, sess, task.Event{
			Type: task.EventNone, State: task.StateConnected, SessionID: sess.id, Timeout: sess.timeout,
		})
		if d := c.reconnectLag; d > 0 { // after the events, which would end it
			c.reconnectLag = 0
			c.lagHeld = c.reconnectHeld
			s.startLag(c, d)
			// The member has applied what the client heard (replies and
			// notifications), not the writes whose replies the cut lost.
			// A watch
			// SetWatches fires for one of those catches it up (the
			// member sends the notification as it applies the write).
			c.view = min(c.view, max(c.heard, s.histFrom))
		}
		s.setWatches(c, sess)
		s.resetPersistent(sess)
		return
	}
	c.reconnectLag = 0
	if sess != nil {
		sess.conn = nil
		s.notWatching(c, sess, task.StateExpired)
		c.sessionEvent(task.StateExpired)
	}
	c.establish()
	if d := c.newSessionLag; d > 0 && sess != nil { // after the events, which would end it
		c.newSessionLag = 0
		// The client presents no zxid for a new session: its member
		// may be behind anything the old session saw (LagAtNewSession).
		c.seen, c.heard = 0, 0
		c.lagHeld = c.newSessionHeld
		s.startLag(c, d)
	}
}

// partition cuts c off for d (0: reconnect at once). Lock held.
func (s *Server) partition(c *Conn, d time.Duration, applyInFlight bool) {
	if c.closed || (!c.started && d <= 0) {
		return // closed, or a drop before the start: nothing to break
	}
	if c.started {
		s.disconnect(c, applyInFlight)
	}
	if d <= 0 {
		s.reconnect(c)
		return
	}
	c.netDown = true
	if c.heal != nil {
		c.heal.Stop()
	}
	c.heal = s.afterFunc(d, func() {
		c.heal = nil
		c.netDown = false
		s.tracef("c%d partition healed", c.num)
		s.reconnect(c)
	})
}

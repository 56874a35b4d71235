package zkadapter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/internal/framescan"
	"github.com/zkflow/zkflow/task"
)

// onZKEvent is go-zookeeper's event callback. It runs on go-zookeeper's
// goroutines (its connection loop for session states, its receive loop for
// node events), must not block and must not call the zk.Conn: it only
// updates the session state under c.mu and queues events.
//
// go-zookeeper emits five session states: Connecting and Connected (a TCP
// connection, no session yet: ignored), HasSession (usable), Disconnected
// and Expired. Node events come from its receive loop, in the order they
// arrive, interleaved with the replies recvFunc handles: they fire the
// Conn's own watches (watch.go).
func (c *Conn) onZKEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession:
		if ev.Server == "" {
			// A notification the server wrote (xid -1) with type None:
			// go-zookeeper's receive loop hands it on as it reads it,
			// naming no server, where its own session states (setState)
			// name the server they concern. What the server writes is
			// not a state of this client's session (ZooKeeper's client
			// keeps its own state too): taken for one, it would report
			// an expiry of a live session, or complete requests still
			// to be written with ErrNotSent, and refuse every request
			// while the connection lasts.
			c.log.Warn("zkadapter: ignoring a notification of type None from the server", "state", int32(ev.State), "path", ev.Path)
			return
		}
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
		c.mu.Lock()
		if !c.closing {
			c.notify(ev)
		}
		c.mu.Unlock()
		return
	default:
		// EventNotWatching: go-zookeeper ending its own watch channels
		// (with its watchers lock held: do not take c.mu). The Conn ends
		// its watches itself, in expire and Close.
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		id, timeout := c.hs.sessionID, c.hs.timeout
		if c.sessionID != 0 && id != c.sessionID && c.state != task.StateExpired {
			// A new session without an Expired state first: never let the
			// runtime see a silent switch.
			c.expire()
		}
		c.live = c.wireNo.Load()
		if id != c.sessionID {
			c.lastZxid = 0
		} else if c.waived {
			// Resumed with the zxid waived: possibly on a server behind
			// what the session saw. The prelude syncs it first.
			c.syncFirst = true
		}
		c.waived = false
		// The connection's first requests: credentials, then the watches
		// to set again (prelude). The sender queues them before any
		// request made on the connection (Do spills until it has); with
		// nothing to send, there is no prelude to wait for.
		if len(c.cfg.Auth) == 0 && len(c.watches) == 0 && len(c.pwatches) == 0 && !c.syncFirst {
			c.preluded = c.live
		} else {
			c.spill.put(&call{conn: c.live, marker: true})
		}
		if o := c.obs; o != nil {
			addr := ""
			if c.wire != nil {
				addr = c.wire.addr
			}
			o.OnConn(task.ConnEvent{Kind: task.ConnEstablished, Server: addr, Session: id, Reconnect: id == c.sessionID})
		}
		if c.state == task.StateConnected && id == c.sessionID {
			return
		}
		resumed := c.state == task.StateSuspended && id == c.sessionID
		c.sessionID, c.timeout, c.state = id, timeout, task.StateConnected
		ev := task.Event{Type: task.EventNone, State: task.StateConnected, SessionID: id, Timeout: timeout}
		c.emit(ev)
		if resumed {
			c.persistentState(ev)
		}
		if len(c.cfg.Auth) == 0 {
			c.firstDone()
		} // else the last credential's acceptance does (authReply)
	case zk.StateDisconnected:
		if c.state == task.StateConnected {
			c.state = task.StateSuspended
			c.emit(task.Event{Type: task.EventNone, State: task.StateSuspended})
			c.persistentState(task.Event{Type: task.EventNone, State: task.StateSuspended})
		}
		c.connectionEnded()
	case zk.StateExpired:
		if c.sessionID != 0 && c.state != task.StateExpired {
			c.expire()
		}
		c.lastZxid = 0
	default:
		c.log.Debug("zkadapter: session state", "state", ev.State.String(), "server", ev.Server)
	}
}

// firstDone lets Connect return: the first session is established (and
// its credentials accepted). c.mu must be held.
func (c *Conn) firstDone() {
	select {
	case <-c.first:
	default:
		close(c.first)
	}
}

// expire ends the current session: bumps the generation, reports
// StateExpired, fails every pending request of the old session with
// ErrSessionExpired and ends every watch with EventNotWatching (State
// Expired), all before the next StateConnected. c.mu must be held.
func (c *Conn) expire() {
	c.gen++
	c.state = task.StateExpired
	c.emit(task.Event{Type: task.EventNone, State: task.StateExpired})
	for cl := c.head; cl != nil; {
		next := cl.next
		if cl.gen != c.gen {
			c.finish(cl, task.Response{Err: task.ErrSessionExpired})
		}
		cl = next
	}
	c.endWatches(task.StateExpired)
}

// handshake is what the server answered to the last connect request.
type handshake struct {
	timeout   time.Duration
	sessionID int64
	passwd    []byte
}

// dial is the zk.Dialer: it opens the connection with the configured
// Dialer (then TLS when configured) under a context that ends at the
// connect timeout or at Close, and wraps it in a wireConn, which bounds
// the handshake, reads the connect response as it passes (go-zookeeper
// keeps the negotiated timeout to itself) and numbers the connection.
func (c *Conn) dial(network, addr string, _ time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(c.dialCtx, c.cfg.ConnectTimeout)
	defer cancel()
	nc, err := tlsDial(ctx, c.cfg.Dialer, c.cfg.TLS, network, addr)
	if o := c.obs; o != nil {
		o.OnConn(task.ConnEvent{Kind: task.ConnAttempt, Server: addr, Err: err})
	}
	if err != nil {
		c.mu.Lock()
		c.lastErr = fmt.Errorf("dial %s: %w", addr, err)
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		nc.Close()
		return nil, task.ErrClosed
	}
	now := time.Now()
	w := &wireConn{Conn: nc, c: c, addr: addr, no: c.wireNo.Add(1), hsBy: now.Add(c.handshakeTimeoutLocked())}
	c.wire, c.wireSince, c.wireEnded = w, now, false
	c.mu.Unlock()
	return w, nil
}

// handshakeTimeoutLocked bounds one handshake (connect request to connect
// response): the session timeout divided by the number of servers, as
// ZooKeeper's own client does, so that a member that accepts connections
// but says nothing costs one share of the timeout and the client moves
// on; and at most half the timeout, so that with one server a handshake
// it never answers leaves time to dial it again before the session
// expires (ZooKeeper 3.8 neither answers nor closes a connection made
// while it starts, and a restarted server gives the sessions it loads a
// timeout from then). c.mu must be held.
func (c *Conn) handshakeTimeoutLocked() time.Duration {
	t := c.cfg.SessionTimeout
	if c.timeout > 0 {
		t = c.timeout
	}
	return max(t/time.Duration(max(len(c.cfg.Servers), 2)), minHandshakeTimeout)
}

// minHandshakeTimeout keeps the handshake bound sane for tiny timeouts.
const minHandshakeTimeout = 100 * time.Millisecond

// wireConn is one connection to one server as go-zookeeper uses it. It is
// read by go-zookeeper's connection loop during the handshake and by its
// receive loop afterwards (which the loop starts after the handshake), and
// written by the loop and then its send loop: one goroutine at a time for
// each direction, so its fields need no lock, but ended, which both
// directions set (under c.mu).
type wireConn struct {
	net.Conn
	c    *Conn
	addr string
	no   uint64    // the connection's number (Conn.wireNo)
	hsBy time.Time // the handshake must be over by then

	wrote bool   // the connect request was written
	buf   []byte // the connect response read so far
	done  bool   // the connect response was read (or refused as not ZooKeeper's)
	ended bool   // its end is recorded (c.mu)

	// The ping watch (watchPings): wr and rd follow the frames written
	// and read (their goroutines only); the rest is under pingMu.
	wr, rd   framescan.Scanner
	lens     frameLens // the lengths of the frames read (the receive goroutine)
	pingMu   sync.Mutex
	sent     time.Time   // when the connect request was written
	pings    []time.Time // when each ping not answered yet was written, oldest first
	answered time.Time   // when the last ping answered (or the connect request) was written
	within   time.Duration
	watchdog *time.Timer
	stopped  bool
}

// Pings and silence. The server expires a session a timeout after it last
// heard from the client; go-zookeeper gives up a connection when it has
// read nothing for two-thirds of the timeout. Reads include the
// notifications the server sends on its own, which may come up to a third
// of the timeout after the last ping the server heard (go-zookeeper pings
// every third): a silent partition then goes unnoticed until about when
// the server expires the session, and a rule such as an election's
// give-up, which needs to know of the disconnect a margin before, comes
// too late. So the Conn counts from what the server has provably heard:
// each ping's reply (replies come in request order) proves the server
// heard from the client no earlier than the ping was written. When no
// ping written after the last answered one has been answered
// two-thirds of the timeout after it, the connection is given up (closed,
// as a silent server's).

// watchPings starts the ping watch once the handshake has granted a
// session with timeout t.
func (w *wireConn) watchPings(t time.Duration) {
	if t <= 0 {
		return
	}
	w.pingMu.Lock()
	defer w.pingMu.Unlock()
	w.within = t * 2 / 3
	w.answered = w.sent
	if !w.stopped {
		w.watchdog = time.AfterFunc(time.Until(w.answered.Add(w.within)), w.silent)
	}
}

// pingWritten records a ping written at t.
func (w *wireConn) pingWritten(t time.Time) {
	w.pingMu.Lock()
	w.pings = append(w.pings, t)
	w.pingMu.Unlock()
}

// pingAnswered records the reply of the oldest ping not answered yet.
func (w *wireConn) pingAnswered() {
	w.pingMu.Lock()
	defer w.pingMu.Unlock()
	if len(w.pings) == 0 {
		return // a reply to no ping written: go-zookeeper's business
	}
	w.answered = w.pings[0]
	w.pings = w.pings[1:]
	if w.watchdog != nil && !w.stopped {
		w.watchdog.Reset(time.Until(w.answered.Add(w.within)))
	}
}

// silent gives the connection up: no ping was answered in time.
func (w *wireConn) silent() {
	w.pingMu.Lock()
	if w.stopped {
		w.pingMu.Unlock()
		return
	}
	w.stopped = true
	answered, within := w.answered, w.within
	w.pingMu.Unlock()
	w.c.connectionLost(w, fmt.Errorf("the server answered no ping within %s (two-thirds of the session timeout) of the last one it answered, written at %s", within, answered.Format(time.RFC3339Nano)))
	_ = w.Conn.Close()
}

// stopPings ends the ping watch.
func (w *wireConn) stopPings() {
	w.pingMu.Lock()
	defer w.pingMu.Unlock()
	w.stopped = true
	if w.watchdog != nil {
		w.watchdog.Stop()
	}
}

// Close ends the ping watch and closes the connection.
func (w *wireConn) Close() error {
	w.stopPings()
	return w.Conn.Close()
}

// maxConnectResponse bounds the first frame: a connect response is 37
// bytes. Anything much longer is not ZooKeeper talking, and go-zookeeper
// would allocate whatever length the first four bytes claim.
const maxConnectResponse = 1 << 12

// minConnectResponse is the shortest connect response: protocolVersion,
// timeOut, sessionId and the password's length (ZooKeeper's
// ConnectResponse record).
const minConnectResponse = 4 + 4 + 8 + 4

// whoAnswers names the kind of server whose first bytes are b, when they
// are a well-known greeting or reply.
func whoAnswers(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("HTTP")):
		return ", as an HTTP server does"
	case bytes.HasPrefix(b, []byte("SSH-")):
		return ", as an SSH server does"
	}
	return ""
}

// SetReadDeadline and SetWriteDeadline cap go-zookeeper's deadlines at the
// handshake bound until the connect response has been read (go-zookeeper
// allows ten times two-thirds of the session timeout, and reads the body
// of the response with no deadline at all).
func (w *wireConn) SetReadDeadline(t time.Time) error {
	if !w.done && (t.IsZero() || t.After(w.hsBy)) {
		t = w.hsBy
	}
	return w.Conn.SetReadDeadline(t)
}

func (w *wireConn) SetWriteDeadline(t time.Time) error {
	if !w.wrote && (t.IsZero() || t.After(w.hsBy)) {
		t = w.hsBy
	}
	return w.Conn.SetWriteDeadline(t)
}

// Write passes go-zookeeper's writes on. The first is the connect request:
// the Conn puts its own view of the session in it (connectRequest).
func (w *wireConn) Write(p []byte) (int, error) {
	now := time.Now()
	if !w.wrote {
		w.wrote = true
		w.pingMu.Lock()
		w.sent = now
		w.pingMu.Unlock()
		p = w.c.connectRequest(p)
	} else {
		w.wr.Feed(p, func(xid int32) {
			if xid == framescan.Ping {
				w.pingWritten(now)
			}
		})
	}
	n, err := w.Conn.Write(p)
	if err != nil {
		if w.done {
			w.c.connectionLost(w, err)
		} else {
			w.c.handshakeFailed(w, err)
		}
	}
	return n, err
}

// Read passes go-zookeeper's reads on. Until the connect response has been
// read it checks that the bytes are one: a length no connect response has,
// or a response that grants a session with a timeout that is not positive
// (go-zookeeper would panic on it), is not ZooKeeper talking.
func (w *wireConn) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	if w.done {
		if n > 0 {
			w.c.heard.Store(time.Now().UnixNano())
			if blen, ok := w.lens.short(p[:n]); ok && err == nil {
				// go-zookeeper would slice the body from byte 16 on: a
				// panic on its receive goroutine.
				n, err = 0, fmt.Errorf("%w: a frame of %d bytes, shorter than a reply header (%d)", ErrNotZooKeeper, blen, replyHeaderSize)
			} else {
				w.rd.Feed(p[:n], func(xid int32) {
					if xid == framescan.Ping {
						w.pingAnswered()
					}
				})
			}
		}
		if err != nil {
			w.stopPings()
			w.c.connectionLost(w, err)
			// go-zookeeper waits for its send loop before it dials again;
			// a Write blocked on a silent server's full window would hold
			// the reconnect up to two-thirds of a session timeout past the
			// read's: closing the socket ends that Write at once.
			_ = w.Conn.Close()
		}
		return n, err
	}
	if n > 0 {
		w.buf = append(w.buf, p[:n]...)
		if len(w.buf) >= 4 {
			blen := int(binary.BigEndian.Uint32(w.buf))
			if blen > maxConnectResponse || blen < minConnectResponse {
				return 0, w.notZooKeeper(fmt.Errorf("handshake with %s: %w: it answered %q%s", w.addr, ErrNotZooKeeper, w.buf[:min(len(w.buf), 16)], whoAnswers(w.buf)))
			}
			if len(w.buf) >= 4+blen {
				hs := parseHandshake(w.buf[4 : 4+blen])
				if hs.sessionID != 0 && hs.timeout <= 0 {
					// ZooKeeper negotiates a timeout of at least twice its
					// tickTime; 0 comes only with an expired session (id 0).
					return 0, w.notZooKeeper(fmt.Errorf("handshake with %s: %w: its connect response grants session 0x%x a timeout of %d ms",
						w.addr, ErrNotZooKeeper, hs.sessionID, hs.timeout.Milliseconds()))
				}
				w.done = true
				w.c.sawHandshake(hs)
				w.buf = nil
				if hs.sessionID != 0 {
					w.watchPings(hs.timeout)
				}
			}
		}
	}
	if err != nil && !w.done {
		w.c.handshakeFailed(w, err)
	}
	return n, err
}

// replyHeaderSize is the shortest frame a server sends after the
// handshake: a reply header (xid, zxid, err), which every reply, ping
// reply and notification starts with.
const replyHeaderSize = 4 + 8 + 4

// frameLens follows the lengths of the frames of a stream read after the
// handshake, however it is split into reads. The zero value is at the
// start of a frame.
type frameLens struct {
	len  [4]byte // the frame's length
	have int     // bytes of len read so far
	left int     // bytes of the frame's body not read yet
}

// short reads p, the stream's next bytes, and reports the length of a
// frame p completes the length of that is shorter than a reply header.
func (f *frameLens) short(p []byte) (int, bool) {
	for len(p) > 0 {
		if f.have < len(f.len) {
			k := copy(f.len[f.have:], p)
			f.have += k
			p = p[k:]
			if f.have == len(f.len) {
				n := int(binary.BigEndian.Uint32(f.len[:]))
				if n < replyHeaderSize {
					return n, true
				}
				f.left = n
			}
			continue
		}
		k := min(f.left, len(p))
		f.left -= k
		p = p[k:]
		if f.left == 0 {
			f.have = 0
		}
	}
	return 0, false
}

// notZooKeeper ends the handshake of w, whose server answered the connect
// request with something that is not a valid connect response: it records
// herr (wrapping ErrNotZooKeeper) as the attempt's cause, closes the
// connection and returns herr, which go-zookeeper's handshake then fails
// with (it tries the next server).
func (w *wireConn) notZooKeeper(herr error) error {
	w.done = true
	c := w.c
	c.mu.Lock()
	w.ended = true
	c.lastErr, c.notZK = herr, herr
	if w == c.wire {
		c.wireEnded = true
	}
	c.mu.Unlock()
	if o := c.obs; o != nil {
		o.OnConn(task.ConnEvent{Kind: task.ConnHandshakeFailed, Server: w.addr, Err: herr})
	}
	w.Conn.Close()
	return herr
}

// connectionLost records the end of connection w after its handshake (the
// first read or write error) as the last attempt's cause, for Connect's
// error: a server that closes the connection after granting the session,
// such as on a request of the prelude, is named instead of no cause at
// all. Not after Close.
func (c *Conn) connectionLost(w *wireConn, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || w.ended {
		return
	}
	w.ended = true
	c.lastErr = fmt.Errorf("connection to %s lost after the handshake: %w", w.addr, err)
}

// connectRequest rewrites the lastZxidSeen of go-zookeeper's connect
// request (one frame: length, protocolVersion, lastZxidSeen, timeOut,
// sessionId, passwd) with the Conn's own: the last zxid of a reply on the
// current session (go-zookeeper keeps an older session's until a reply
// comes), or 0 once the Conn has waived it (handshakeFailed). The session
// id and password are go-zookeeper's.
func (c *Conn) connectRequest(p []byte) []byte {
	const zxidAt, pwAt = 8, 28
	if len(p) < pwAt+4 {
		return p
	}
	c.mu.Lock()
	zxid := c.lastZxid
	if c.waived {
		zxid = 0
	}
	c.mu.Unlock()
	q := append([]byte(nil), p...)
	binary.BigEndian.PutUint64(q[zxidAt:], uint64(zxid))
	return q
}

// handshakeFailed is told of a connection that ended before its connect
// response: a server that refused the connect request (closed or reset),
// or one that said nothing in time. A server refuses a client that has
// seen a later zxid than its own (all of its data was lost) and, the same
// way on the wire, a server that is not serving. Once no server has
// accepted the session for longer than its timeout, and the last attempt
// was refused, the Conn waives its zxid: it presents lastZxidSeen 0 and
// its session as before. A server that lost its data does not know the
// session either and says it expired (the executor sees StateExpired,
// then a new session); one that was only not serving resumes it (and the
// prelude then syncs first, so no read answers from behind what the
// client saw). The session ends only when a server says so: the Conn
// never gives up a session the servers keep, so StateExpired still means
// its ephemerals are gone.
func (c *Conn) handshakeFailed(w *wireConn, err error) {
	var ne net.Error
	silent := errors.As(err, &ne) && ne.Timeout()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	if w == c.wire {
		c.wireEnded = true
	}
	if silent {
		c.lastErr = fmt.Errorf("handshake with %s: no connect response within %s: %w", w.addr, c.handshakeTimeoutLocked(), err)
	} else {
		c.lastErr = fmt.Errorf("handshake with %s: the server closed the connection (refused: not serving, or it has lost data this client saw): %w", w.addr, err)
	}
	if o := c.obs; o != nil {
		o.OnConn(task.ConnEvent{Kind: task.ConnHandshakeFailed, Server: w.addr, Session: c.sessionID, Err: c.lastErr})
	}
	if silent {
		return
	}
	heard := c.heard.Load()
	if c.sessionID == 0 || c.waived || heard == 0 {
		return
	}
	t := c.timeout
	if t == 0 {
		t = c.cfg.SessionTimeout
	}
	if since := time.Since(time.Unix(0, heard)); since > t {
		c.waived = true
		c.log.Warn("zkadapter: no server has accepted the session for longer than its timeout; presenting it with lastZxidSeen 0",
			"session", fmt.Sprintf("0x%x", c.sessionID), "since", since.Round(time.Millisecond), "server", w.addr)
	}
}

// parseHandshake reads a connect response b (at least
// minConnectResponse bytes).
func parseHandshake(b []byte) handshake {
	// int32 protocolVersion, int32 timeOut, int64 sessionId, buffer passwd
	hs := handshake{
		timeout:   time.Duration(int32(binary.BigEndian.Uint32(b[4:]))) * time.Millisecond,
		sessionID: int64(binary.BigEndian.Uint64(b[8:])),
	}
	if len(b) >= 24 {
		if n := int(int32(binary.BigEndian.Uint32(b[16:]))); n > 0 && len(b) >= 20+n {
			hs.passwd = append([]byte(nil), b[20:20+n]...)
		}
	}
	return hs
}

// sawHandshake records the connect response of the current connection.
func (c *Conn) sawHandshake(hs handshake) {
	c.mu.Lock()
	c.hs = hs
	c.wireEnded = true
	c.mu.Unlock()
	if hs.sessionID != 0 {
		c.heard.Store(time.Now().UnixNano())
	}
}

// closeWire closes the current connection, which ends go-zookeeper's
// reads and writes on it at once (a handshake in progress, a receive loop
// waiting on a silent server).
func (c *Conn) closeWire() {
	c.mu.Lock()
	w := c.wire
	c.mu.Unlock()
	if w != nil {
		w.Conn.Close()
	}
}

// zkLogger hands go-zookeeper's log lines to slog, and remembers failures
// for Connect's error.
type zkLogger struct{ c *Conn }

func (l zkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	level := slog.LevelDebug
	if strings.HasPrefix(msg, "failed to connect") || strings.HasPrefix(msg, "authentication failed") {
		level = slog.LevelWarn
	} else if strings.Contains(msg, "Failed to set previous watches") {
		// go-zookeeper only logs this: the watches it could not restore
		// will never fire (their channels close when the session ends).
		level = slog.LevelError
	}
	l.c.log.Log(context.Background(), level, "zk: "+msg)
}

// serverLocked returns the server go-zookeeper last tried. c.mu must be held.
func (c *Conn) serverLocked() string {
	if c.zc == nil {
		return "server"
	}
	return c.zc.Server()
}

package zkadapter

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
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
		if c.state == task.StateConnected && id == c.sessionID {
			return
		}
		c.sessionID, c.timeout, c.state = id, timeout, task.StateConnected
		c.emit(task.Event{Type: task.EventNone, State: task.StateConnected, SessionID: id, Timeout: timeout})
		select {
		case <-c.first:
		default:
			close(c.first)
		}
	case zk.StateDisconnected:
		if c.state == task.StateConnected {
			c.state = task.StateSuspended
			c.emit(task.Event{Type: task.EventNone, State: task.StateSuspended})
		}
	case zk.StateExpired:
		if c.sessionID != 0 && c.state != task.StateExpired {
			c.expire()
		}
	default:
		c.log.Debug("zkadapter: session state", "state", ev.State.String(), "server", ev.Server)
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
	for cl := range c.pending {
		if cl.gen != c.gen {
			c.finish(cl, task.Response{Err: task.ErrSessionExpired})
		}
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
// Dialer and a context that ends at the connect timeout or at Close, and
// wraps it to read the connect response as it passes (go-zookeeper keeps
// the negotiated timeout to itself).
func (c *Conn) dial(network, addr string, _ time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(c.dialCtx, c.cfg.ConnectTimeout)
	defer cancel()
	nc, err := tlsDial(ctx, c.cfg.Dialer, c.cfg.TLS, network, addr)
	if err != nil {
		c.mu.Lock()
		c.lastErr = fmt.Errorf("dial %s: %w", addr, err)
		c.mu.Unlock()
		return nil, err
	}
	return &sniffConn{Conn: nc, c: c, addr: addr}, nil
}

// sniffConn copies the first frame read from the server (the connect
// response: protocol version, timeout, session id, password) to its Conn.
// go-zookeeper reads it on its connection loop goroutine and only then
// starts the receive loop, so done needs no lock.
type sniffConn struct {
	net.Conn
	c    *Conn
	addr string
	buf  []byte
	done bool
}

// maxConnectResponse bounds the first frame: a connect response is 37
// bytes. Anything much longer is not ZooKeeper talking, and go-zookeeper
// would allocate whatever length the first four bytes claim.
const maxConnectResponse = 1 << 12

func (s *sniffConn) Read(p []byte) (int, error) {
	n, err := s.Conn.Read(p)
	if !s.done && n > 0 {
		s.buf = append(s.buf, p[:n]...)
		if len(s.buf) >= 4 {
			blen := int(binary.BigEndian.Uint32(s.buf))
			if blen > maxConnectResponse {
				s.done = true
				herr := fmt.Errorf("handshake with %s: not a ZooKeeper server (it answered %q)", s.addr, s.buf[:min(len(s.buf), 16)])
				s.c.mu.Lock()
				s.c.lastErr = herr
				s.c.mu.Unlock()
				s.Conn.Close()
				return 0, herr
			}
			if len(s.buf) >= 4+blen {
				s.done = true
				s.c.sawHandshake(s.buf[4 : 4+blen])
				s.buf = nil
			}
		}
	}
	return n, err
}

func (c *Conn) sawHandshake(b []byte) {
	// int32 protocolVersion, int32 timeOut, int64 sessionId, buffer passwd
	if len(b) < 20 {
		return
	}
	hs := handshake{
		timeout:   time.Duration(int32(binary.BigEndian.Uint32(b[4:]))) * time.Millisecond,
		sessionID: int64(binary.BigEndian.Uint64(b[8:])),
	}
	if len(b) >= 24 {
		if n := int(int32(binary.BigEndian.Uint32(b[16:]))); n > 0 && len(b) >= 20+n {
			hs.passwd = append([]byte(nil), b[20:20+n]...)
		}
	}
	c.mu.Lock()
	c.hs = hs
	c.mu.Unlock()
}

// zkLogger hands go-zookeeper's log lines to slog, and remembers failures
// for Connect's error.
type zkLogger struct{ c *Conn }

func (l zkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	level := slog.LevelDebug
	if strings.HasPrefix(msg, "failed to connect") || strings.HasPrefix(msg, "authentication failed") {
		level = slog.LevelWarn
		l.c.mu.Lock()
		if strings.HasPrefix(msg, "authentication failed") {
			l.c.lastErr = fmt.Errorf("handshake with %s: %s", l.c.serverLocked(), msg)
		}
		l.c.mu.Unlock()
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

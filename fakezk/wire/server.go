package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// Config describes a wire Server. The zero value serves with ZooKeeper
// 3.8's defaults.
type Config struct {
	// MaxFrame is the largest frame payload a connection may send
	// (jute.maxbuffer); 0 means DefaultMaxFrame. A longer one closes
	// that connection.
	MaxFrame int
	// HandshakeTimeout bounds, in real time, how long a new connection
	// may take to send its connect request (or four-letter word) before
	// it is closed; 0 means 10s.
	HandshakeTimeout time.Duration
	// OnAttach, if set, is called with the session's id once a connection
	// has been attached to its session (a new one or a resumed one), and
	// OnDetach once the session has been told that a connection of it
	// closed (what is left of its timeout, counted from the last frame
	// the connection read, then runs on the server's clock). They are
	// called on the connection's goroutine and must not block: a test
	// hands them to a channel to wait for a client in real time.
	OnAttach, OnDetach func(sessionID int64)
}

// Server serves ZooKeeper's client protocol for a fakezk.Server.
type Server struct {
	zk  *fakezk.Server
	cfg Config

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	links     map[*link]struct{}
	closed    bool
	wg        sync.WaitGroup
}

// ErrServerClosed is what Serve returns after Close.
var ErrServerClosed = errors.New("wire: server closed")

// New returns a Server for zk, which must be in automatic mode (the
// default, Async or not): a remote client's requests are applied as they
// arrive.
func New(zk *fakezk.Server, cfg Config) *Server {
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	return &Server{zk: zk, cfg: cfg, listeners: map[net.Listener]struct{}{}, links: map[*link]struct{}{}}
}

// Serve accepts connections on l until l fails or Close is called; it then
// closes l and returns (ErrServerClosed after Close).
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if !s.serveConn(nc) {
			return ErrServerClosed
		}
	}
}

// serveConn serves one connection on two goroutines of its own; false if
// the server is closed.
func (s *Server) serveConn(nc net.Conn) bool {
	lk := &link{s: s, nc: nc, w: bufio.NewWriter(nc), kick: make(chan struct{}, 1), done: make(chan struct{}),
		st: linkStats{lop: "NA", lcxid: -1}}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return false
	}
	s.links[lk] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	go lk.readLoop()
	go lk.writeLoop()
	return true
}

// Close stops every Serve, closes every connection (their sessions live
// on in the fakezk.Server, as when a server process stops) and waits for
// every goroutine of the Server to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	links := make([]*link, 0, len(s.links))
	for lk := range s.links {
		links = append(links, lk)
	}
	s.mu.Unlock()
	for _, lk := range links {
		lk.close()
	}
	s.wg.Wait()
	return nil
}

// link is one TCP connection: a reader goroutine that decodes requests and
// hands them to the session, and sends the replies it got meanwhile; a
// writer goroutine that sends those filled from other goroutines (another
// session's write that fires a watch of this one, deliveries of an Async
// fakezk.Server); both in request order with the notifications where the
// session queued them.
type link struct {
	s  *Server
	nc net.Conn
	fz *fakezk.Link // nil until the handshake succeeds
	// timeout is the negotiated session timeout.
	timeout time.Duration

	mu      sync.Mutex
	slots   []*slot // replies in request order; notifications among them
	lastEnd bool    // close once the slots are written
	// serving is set while the reader serves a request: what is filled
	// meanwhile is written by the reader itself once it is done (unless
	// another whole request is already buffered: then later, in one
	// write with its reply), so the writer is not woken for it.
	serving bool
	// wmu is held while taking the filled slots and writing them, by the
	// reader or the writer: one at a time, so frames go out in order.
	wmu       sync.Mutex
	w         *bufio.Writer
	kick      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	st linkStats // what cons reports; under mu
}

// linkStats are a connection's figures as the cons four-letter word
// reports them (ServerCnxn.dumpConnectionInfo). Latencies are not kept.
type linkStats struct {
	recved, sent int64
	est, lresp   int64 // Unix milliseconds
	lop          string
	lcxid        int64 // -1 before the first request
	lzxid        int64
}

type slot struct {
	b      []byte
	filled bool
}

func (lk *link) close() {
	lk.closeOnce.Do(func() {
		close(lk.done)
		lk.nc.Close()
	})
}

func (lk *link) wake() {
	select {
	case lk.kick <- struct{}{}:
	default:
	}
}

// reserve takes the next reply slot, in request order.
func (lk *link) reserve() *slot {
	sl := &slot{}
	lk.mu.Lock()
	lk.slots = append(lk.slots, sl)
	lk.mu.Unlock()
	return sl
}

func (lk *link) fill(sl *slot, b []byte) {
	lk.mu.Lock()
	sl.b, sl.filled = b, true
	own := lk.serving
	lk.mu.Unlock()
	if !own {
		lk.wake()
	}
}

// reply sends b after every reply reserved before it.
func (lk *link) reply(b []byte) { lk.fill(lk.reserve(), b) }

// notify sends a notification now: ahead of the replies the session has
// not produced yet, behind those it has.
func (lk *link) notify(b []byte) {
	lk.mu.Lock()
	i := 0
	for i < len(lk.slots) && lk.slots[i].filled {
		i++
	}
	lk.slots = append(lk.slots, nil)
	copy(lk.slots[i+1:], lk.slots[i:])
	lk.slots[i] = &slot{b: b, filled: true}
	own := lk.serving
	lk.mu.Unlock()
	if !own {
		lk.wake()
	}
}

// closeAfter closes the link once everything queued is written.
func (lk *link) closeAfter() {
	lk.mu.Lock()
	lk.lastEnd = true
	lk.mu.Unlock()
	lk.wake()
}

func (lk *link) writeLoop() {
	defer lk.s.wg.Done()
	for {
		select {
		case <-lk.done:
			return
		case <-lk.kick:
		}
		for {
			n, ok := lk.writeOut()
			if !ok {
				lk.close()
				return
			}
			if n == 0 {
				break
			}
		}
	}
}

// writeOut writes the filled slots at the head of the queue, in order, in
// one flush, and returns how many; false when the link must close (a
// write failed, or everything is written after closeAfter). A write that
// cannot go out within the session timeout fails: a client that takes no
// reply for that long is gone, as one that sends nothing is (readLoop).
func (lk *link) writeOut() (int, bool) {
	lk.wmu.Lock()
	defer lk.wmu.Unlock()
	lk.mu.Lock()
	n := 0
	for n < len(lk.slots) && lk.slots[n].filled {
		n++
	}
	out := make([][]byte, n)
	for i := range n {
		out[i] = lk.slots[i].b
	}
	lk.slots = append(lk.slots[:0], lk.slots[n:]...)
	if n > 0 {
		lk.st.sent += int64(n)
		lk.st.lresp = time.Now().UnixMilli()
	}
	end := lk.lastEnd && len(lk.slots) == 0
	timeout := lk.timeout
	lk.mu.Unlock()
	if n > 0 {
		if timeout > 0 {
			lk.nc.SetWriteDeadline(time.Now().Add(timeout))
		}
		for _, b := range out {
			if _, err := lk.w.Write(b); err != nil {
				return n, false
			}
		}
		if err := lk.w.Flush(); err != nil {
			return n, false
		}
	}
	return n, !end
}

// frameBuffered reports whether r holds a whole frame already, so that
// reading it will not block.
func frameBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	b, _ := r.Peek(4)
	n := int(int32(binary.BigEndian.Uint32(b)))
	return n >= 0 && 4+n <= r.Buffered()
}

// bugServeReplacedLink is fakezk's canary of the same name: requests a
// link read before Resume replaced it are served.
const bugServeReplacedLink canary.Name = "fakezk/serve-replaced-link"

// Test hooks: testHookRead, if set, is called with each request a link
// has read, before it is served (to hold a link's request while the
// session resumes on another connection); testHookEnd when a link's
// reader has returned.
var (
	testHookRead atomic.Pointer[func(lk *link, r *Request)]
	testHookEnd  atomic.Pointer[func(lk *link)]
)

func (lk *link) readLoop() {
	defer lk.s.wg.Done()
	defer func() {
		if h := testHookEnd.Load(); h != nil {
			defer (*h)(lk)
		}
		// The server first, then the client: a session whose timeout
		// has run out since its last packet is expired before the
		// client, seeing the close, can present it again.
		if lk.fz != nil {
			lk.fz.Detach()
		}
		lk.close()
		if lk.fz != nil && lk.s.cfg.OnDetach != nil {
			lk.s.cfg.OnDetach(lk.fz.Conn().SessionID())
		}
		lk.s.mu.Lock()
		delete(lk.s.links, lk)
		lk.s.mu.Unlock()
	}()
	r := bufio.NewReader(lk.nc)
	lk.nc.SetReadDeadline(time.Now().Add(lk.s.cfg.HandshakeTimeout))
	if !lk.handshake(r) {
		return
	}
	var buf []byte
	for {
		// A client silent for its session timeout (real time) has
		// stopped pinging: the link closes, as a server closes the
		// connection of a session it expires. The session's countdown
		// runs on the server's clock from the last frame heard
		// (fakezk.Link.Heard), as a real server's from the last packet:
		// on the real clock it has run out, and the session expires.
		lk.nc.SetReadDeadline(time.Now().Add(lk.timeout))
		b, err := ReadFrame(r, lk.s.cfg.MaxFrame, buf)
		if err != nil {
			return
		}
		buf = b
		lk.fz.Heard()
		req, err := DecodeRequest(b)
		if err != nil {
			// The server cannot read the request: it closes the
			// connection (NIOServerCnxn: an IOException in readRequest).
			return
		}
		if h := testHookRead.Load(); h != nil {
			(*h)(lk, &req)
		}
		if !lk.fz.Current() && !canary.On(bugServeReplacedLink) {
			// The session resumed on another connection while this one
			// still had requests buffered: a real server stops reading a
			// connection it closes, so none of them is served (the
			// requests the session's operations send go through
			// fakezk.Link.Send, which checks this again as it applies).
			return
		}
		lk.mu.Lock()
		lk.serving = true
		lk.st.recved++
		if op := lastOp(req.Op); op != "NA" { // auth and unknown ops leave them
			lk.st.lop, lk.st.lcxid = op, int64(req.Xid) // a ping's -2: cons leaves lcxid out
		}
		lk.mu.Unlock()
		more := lk.serve(&req)
		lk.mu.Lock()
		lk.serving = false
		lk.mu.Unlock()
		if !more {
			lk.wake()
			lk.waitClosed() // the writer sends the last reply, then closes
			return
		}
		// The replies filled while serving go out now, from here (one
		// goroutine hand-off less per request), unless the next request
		// is already in: then with its reply, in one write.
		if !frameBuffered(r) {
			if _, ok := lk.writeOut(); !ok {
				return
			}
		}
	}
}

// handshake reads the connect request (or a four-letter word) and answers
// it. It reports whether the connection goes on to requests.
func (lk *link) handshake(r *bufio.Reader) bool {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return false
	}
	lk.mu.Lock()
	lk.st.recved++
	lk.mu.Unlock()
	if cmd := string(hdr[:]); isFourLetterWord(cmd) {
		port := 0
		if a, ok := lk.nc.LocalAddr().(*net.TCPAddr); ok {
			port = a.Port
		}
		if cmd == "cons" {
			lk.reply(lk.s.cons())
		} else {
			lk.reply(fourLetterWord(lk.s.zk, cmd, port))
		}
		lk.closeAfter()
		lk.waitClosed()
		return false
	}
	b, err := readPayload(r, int32(uint32(hdr[0])<<24|uint32(hdr[1])<<16|uint32(hdr[2])<<8|uint32(hdr[3])), lk.s.cfg.MaxFrame, nil)
	if err != nil {
		return false
	}
	cr, err := DecodeConnectRequest(b)
	if err != nil {
		return false
	}
	zk := lk.s.zk
	if cr.LastZxidSeen > zk.Zxid() {
		// "Refusing session request for client ... as it has seen zxid
		// ...": closed without a connect response.
		return false
	}
	timeout := zk.NegotiateTimeout(time.Duration(cr.TimeOut) * time.Millisecond)
	resp := ConnectResponse{HasReadOnly: cr.HasReadOnly}
	var fl *fakezk.Link
	if cr.SessionID == 0 {
		fl, err = zk.Accept(fakezk.ConnConfig{Timeout: timeout, IP: remoteIP(lk.nc)}, nil)
	} else if bytes.Equal(cr.Passwd, Password(cr.SessionID)) {
		fl, err = zk.Resume(cr.SessionID, timeout, nil)
	} else {
		// A 3.8.0 server closes the session's connection before it
		// checks the password (CloseLinkOf), then refuses this one.
		zk.CloseLinkOf(cr.SessionID)
		err = task.ErrSessionExpired
	}
	switch {
	case errors.Is(err, task.ErrSessionExpired):
		// An unknown or expired session, or a wrong password: timeout
		// 0, session 0, a zero password; then the server closes.
		resp.Passwd = make([]byte, 16)
		lk.reply(frame(resp.Encode))
		lk.closeAfter()
		lk.waitClosed()
		return false
	case err != nil:
		return false
	}
	// A fault (an expiry too), or the session resuming on another
	// connection, cuts the link: it closes at once, whatever the session
	// still has to deliver (a Delay holds it).
	fl.OnCut(lk.close)
	lk.mu.Lock() // writeOut reads the timeout
	lk.fz, lk.timeout = fl, timeout
	lk.st.est, lk.st.lop, lk.st.lzxid = time.Now().UnixMilli(), "SESS", zk.Zxid()
	lk.mu.Unlock()
	id := fl.Conn().SessionID()
	resp.TimeOut = int32(timeout / time.Millisecond)
	resp.SessionID = id
	resp.Passwd = Password(id)
	lk.reply(frame(resp.Encode))
	if lk.s.cfg.OnAttach != nil {
		lk.s.cfg.OnAttach(id)
	}
	return true
}

// waitClosed waits until the writer has written what is queued and closed
// the link, so that the reader does not read past a closing reply.
func (lk *link) waitClosed() { <-lk.done }

func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		if v4 := a.IP.To4(); v4 != nil {
			return v4.String()
		}
	}
	return fakezk.DefaultClientIP
}

// Password is the session password a ZooKeeper server gives session id:
// 16 bytes of java.util.Random seeded with id ^ 0xB3415C00
// (ZooKeeperServer.generatePasswd with its superSecret), so a restarted
// server recomputes it.
func Password(id int64) []byte {
	const mult, mask = 0x5DEECE66D, 1<<48 - 1
	seed := (uint64(id^0xB3415C00) ^ mult) & mask
	next := func() int32 {
		seed = (seed*mult + 0xB) & mask
		return int32(seed >> 16)
	}
	out := make([]byte, 16)
	for i := 0; i < len(out); {
		rnd := next()
		for n := min(len(out)-i, 4); n > 0; n-- {
			out[i] = byte(rnd)
			rnd >>= 8
			i++
		}
	}
	return out
}

package zkadapter

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// call is one request between Do and its outcome.
type call struct {
	req   task.Request
	done  func(task.Response)
	watch func(task.Event)
	gen   uint64 // the session generation it was issued in
	conn  uint64 // the connection it was issued on (Conn.live)
	op    wireOp
	body  guarded // what go-zookeeper's send loop encodes

	// written is set by go-zookeeper's send loop once it has encoded the
	// request for its connection: from then on it may be on the wire.
	written atomic.Bool

	// The Conn's list of pending calls, in Do order (c.mu).
	prev, next *call
	pending    bool

	marker bool // not a request: the sender's cue to send a connection's prelude
}

// Do implements task.Conn. It validates req (task.Validate, with the
// configured data limit, and the length on the wire against the server's
// packet limit: task.ErrDataTooLarge, also for a watch whose path would
// make the SetWatches request that sets it again after a reconnect too
// long), and then:
//
//   - when the Conn is closed or closing, completes it with task.ErrClosed;
//   - when there is no usable session (before the first one, while
//     suspended, after an expiry until the next session), completes it with
//     task.ErrNotSent without handing it to go-zookeeper, which would queue
//     it and might send it on a session opened after an expiry;
//   - otherwise hands it to go-zookeeper's send queue in Do order, so the
//     server sees the session's requests in Do order: at once, on the
//     caller's goroutine, when that queue has room and nothing is waiting
//     before it; otherwise it joins a spill queue that one sender
//     goroutine hands over in order.
//
// Do never blocks on the network. done is called exactly once, under the
// rules of the package doc (any goroutine, never concurrently with
// another callback of the Conn, in the order the session observed the
// outcomes; possibly before Do returns).
func (c *Conn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if done == nil {
		done = func(task.Response) {}
	}
	c.do(&call{req: req, done: done, watch: watch})
}

func (c *Conn) do(cl *call) {
	req := cl.req
	err := reqcheck.Validate(req, c.cfg.MaxDataSize)
	if err == nil && c.cfg.Root != "" {
		req = withRoot(c.cfg.Root, req)
		cl.req = req
	}
	if err == nil && packetSize(req) > c.cfg.MaxPacketSize {
		err = reqcheck.PacketTooLarge(packetSize(req), c.cfg.MaxPacketSize)
	}
	if buf := encodeBufferSize(c.cfg.MaxDataSize); err == nil && 4+packetSize(req) > buf {
		err = encodeTooLarge(packetSize(req), buf)
	}
	if err == nil && task.WatchRequested(req) && rewatchSize(req) > c.cfg.MaxPacketSize {
		// The prelude could not set the watch again after a reconnect.
		err = rewatchTooLarge(rewatchSize(req), c.cfg.MaxPacketSize)
	}
	if _, ok := req.(*task.CheckRequest); ok && err == nil {
		// ZooKeeper 3.8 has check only inside a multi.
		err = task.ErrUnimplemented
	}
	if err != nil || !task.WatchRequested(req) {
		// A request that failed validation may be a nil pointer, which
		// WatchRequested would dereference; it sets no watch anyway.
		cl.watch = nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
	case c.closing:
		err = task.ErrClosed
	case c.state != task.StateConnected || c.zc == nil:
		err = task.ErrNotSent
	case c.followed != 0 && c.sessionID != c.followed:
		// The connection is on a session the executor has not heard of
		// yet: the request belongs to a flow of the session that ended.
		err = task.ErrSessionExpired
	}
	if err != nil {
		c.complete(cl, task.Response{Err: err})
		return
	}
	cl.gen, cl.conn = c.gen, c.live
	c.link(cl)
	if c.spill.empty() && !c.sending && c.preluded == c.live && len(c.sendCh) < cap(c.sendCh) {
		// Nothing waits before it and go-zookeeper's queue has room: the
		// send cannot block (only the sender goroutine, which is idle,
		// and Do, which holds c.mu, put requests on that queue).
		c.queue(c.zc, cl)
		return
	}
	c.spill.put(cl)
	if o := c.obs; o != nil {
		o.OnConn(task.ConnEvent{Kind: task.ConnSpill, Session: c.sessionID, Depth: len(c.spill.items)})
	}
}

// queue puts cl on go-zookeeper's send queue.
func (c *Conn) queue(zc *zk.Conn, cl *call) {
	cl.op = prepare(cl.req)
	cl.body = guarded{c: c, conn: cl.conn, body: cl.op.req, cl: cl}
	zkQueueRequest(zc, cl.op.code, &cl.body, cl.op.res, recvReply)
}

// sender hands the spilled calls to go-zookeeper one by one, in Do order.
// It may block in go-zookeeper's queue (16 deep) while the connection is
// slow or down, never holding c.mu; while it does, Do spills too, so the
// order holds. Before the first call of each connection it queues the
// connection's prelude (credentials, then the watches to set again), so
// no request of the executor reaches a server before them.
func (c *Conn) sender(zc *zk.Conn) {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		cl, ok := c.spill.take()
		c.sending = ok
		c.mu.Unlock()
		if !ok {
			select {
			case <-c.spill.wake:
				continue
			case <-c.dialCtx.Done():
				return
			}
		}
		if cl.marker {
			queued := c.sendPrelude(zc, cl.conn) // may block while go-zookeeper's queue is full
			c.mu.Lock()
			if queued && cl.conn == c.live {
				// Only for the connection still live: while the prelude
				// was blocked, its connection may have ended and a later
				// one been preluded already (preluded never moves back).
				c.preluded = cl.conn
			}
			c.sending = false
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		live := cl.pending
		switch {
		case !live: // completed by a disconnect, an expiry or Close meanwhile
		case cl.gen != c.gen:
			c.finish(cl, task.Response{Err: task.ErrSessionExpired})
			live = false
		case c.state != task.StateConnected || cl.conn != c.live || c.preluded != c.live:
			c.finish(cl, task.Response{Err: task.ErrNotSent})
			live = false
		}
		c.mu.Unlock()
		if live {
			c.queue(zc, cl) // may block while go-zookeeper's queue is full
		}
		c.mu.Lock()
		c.sending = false
		c.mu.Unlock()
	}
}

// guarded is the body of every request the Conn queues with go-zookeeper.
// go-zookeeper's send loop encodes each request right before writing it
// to the connection; guarded refuses to be encoded on any connection but
// the one its request was made on, and go-zookeeper then drops the
// request without writing it (the Conn completes it: task.ErrNotSent). So
// a request is never written on another connection than its own, whatever
// go-zookeeper keeps in its queue across a reconnect: not on a new session
// after an expiry (where the server would apply it for a session that did
// not make it), and not on the same session after a reconnect, ahead of
// the prelude that sets the watches again. A request that is encoded is
// marked written: when its connection ends without a reply it completes
// with task.ErrConnectionLoss (maybe applied); one never encoded, with
// task.ErrNotSent.
type guarded struct {
	c    *Conn
	conn uint64
	body any
	cl   *call // nil for the prelude's requests
}

// errStale is the encoding error of a request held past its connection.
var errStale = errors.New("zkadapter: request held past its connection; not sent")

// Encode implements go-zookeeper's encoder interface. A panic of the
// encoding (go-zookeeper recovers only a slice out of range) is the
// request's error, unsent: it would otherwise end the process on
// go-zookeeper's send goroutine. Conn.do refuses what cannot fit first.
func (g *guarded) Encode(buf []byte) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, fmt.Errorf("%w: encoding the request: %v", task.ErrDataTooLarge, p)
			if g.cl != nil {
				g.c.unsent(g.cl, err)
			}
		}
	}()
	if g.c.wireNo.Load() != g.conn {
		if g.cl != nil {
			g.c.unsent(g.cl, task.ErrNotSent)
		}
		return 0, errStale
	}
	if e, ok := g.body.(interface{ Encode([]byte) (int, error) }); ok {
		n, err = e.Encode(buf)
	} else {
		n, err = zkEncodePacket(buf, g.body)
	}
	if g.cl != nil {
		if err != nil {
			// go-zookeeper drops a request it cannot encode, unsent.
			g.c.unsent(g.cl, mapErr(err))
		} else {
			g.cl.written.Store(true)
		}
	}
	return n, err
}

// unsent completes cl, which go-zookeeper will not write, with err.
func (c *Conn) unsent(cl *call, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl.pending {
		if cl.gen != c.gen {
			err = task.ErrSessionExpired
		}
		c.finish(cl, task.Response{Err: err})
	}
}

// pktOffset is the offset of the request body (pkt) in go-zookeeper's
// request, whose pointer recvReply receives; found by reflection on the
// element type of zk.Conn's send queue, checked by verifyLinkedZK.
var pktOffset = requestPktOffset()

// recvReply is the function go-zookeeper's receive loop calls with every
// reply of a request the Conn queued (rq is go-zookeeper's *request, whose
// body is the call's guarded), decoded into the call's op.res (err is the
// server's error or a decode error). It completes the call and registers
// its watch right there, so that replies and notifications reach the
// Conn's callbacks in the order they arrived from the server. One
// function for every request: no function value per request.
func recvReply(rq, hdr unsafe.Pointer, err error) {
	g, ok := (*(*any)(unsafe.Add(rq, pktOffset))).(*guarded)
	if !ok || g.cl == nil {
		return
	}
	g.c.reply(g.cl, hdr, err)
}

func (c *Conn) reply(cl *call, hdr unsafe.Pointer, err error) {
	if err != nil && hdr != nil && (*zkResponseHeader)(hdr).err == 0 {
		// No server error: the body did not decode (go-zookeeper's
		// ErrShortBuffer, which mapErr reads as a request refused
		// before sending). The server answered: the request may have
		// been applied.
		err = fmt.Errorf("zkadapter: the reply did not decode: %w", err)
	}
	resp := cl.op.reply(cl.op.res, err)
	set := cl.watch != nil && (err == nil || (err == zk.ErrNoNode && cl.op.watchOnNoNode))
	kind := cl.op.watch
	if err == zk.ErrNoNode {
		kind = watchExist
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sawZxid(hdr)
	if !cl.pending || cl.gen != c.gen {
		return // the session expired or the Conn closed first
	}
	if set {
		if r, ok := cl.req.(*task.AddWatchRequest); ok {
			c.addPersistent(r, cl.watch)
		} else {
			c.addWatch(watchKey{cl.req.NodePath(), kind}, cl.watch)
		}
	}
	if r, ok := cl.req.(*task.RemoveWatchesRequest); ok && (err == nil || resp.Err == task.CodeNoWatcher) {
		// Before the reply, as the removed watches' last calls.
		c.removed(r.Path, r.Type)
	}
	if c.cfg.Root != "" {
		resp = stripResponse(c.cfg.Root, resp)
	}
	c.finish(cl, resp)
}

// sawZxid records the zxid of a reply's header (go-zookeeper's
// *responseHeader). c.mu must be held.
func (c *Conn) sawZxid(hdr unsafe.Pointer) {
	if hdr == nil {
		return
	}
	if z := (*zkResponseHeader)(hdr).zxid; z > 0 {
		c.lastZxid = z
	}
}

// connectionEnded completes the calls pending when a connection ended
// (go-zookeeper reports StateDisconnected after its send and receive loops
// for the connection have returned, so no reply can come any more): one
// the send loop encoded with task.ErrConnectionLoss (it may have been
// applied), one it never encoded with task.ErrNotSent (the guard refuses
// it on every later connection). In Do order. c.mu must be held.
func (c *Conn) connectionEnded() {
	for cl := c.head; cl != nil; {
		next := cl.next
		err := task.ErrNotSent
		if cl.written.Load() {
			err = task.ErrConnectionLoss
		}
		c.finish(cl, task.Response{Err: err})
		cl = next
	}
}

// link appends cl to the pending list. c.mu must be held.
func (c *Conn) link(cl *call) {
	cl.pending = true
	cl.prev = c.tail
	if c.tail != nil {
		c.tail.next = cl
	} else {
		c.head = cl
	}
	c.tail = cl
}

// finish removes cl from the pending list and completes it. c.mu must be
// held.
func (c *Conn) finish(cl *call, resp task.Response) {
	if !cl.pending {
		return
	}
	cl.pending = false
	if cl.prev != nil {
		cl.prev.next = cl.next
	} else {
		c.head = cl.next
	}
	if cl.next != nil {
		cl.next.prev = cl.prev
	} else {
		c.tail = cl.prev
	}
	cl.prev, cl.next = nil, nil
	c.complete(cl, resp)
}

// complete makes cl's callback. c.mu must be held: it serializes every
// callback of the Conn.
func (c *Conn) complete(cl *call, resp task.Response) {
	cl.done(resp)
}

// spill is the queue of calls Do could not hand to go-zookeeper at once,
// and of the prelude markers; its items are taken by the sender goroutine.
// Guarded by c.mu, except wake.
type spill struct {
	items []*call
	wake  chan struct{} // capacity 1: "there may be items"
}

func newSpill() spill { return spill{wake: make(chan struct{}, 1)} }

func (s *spill) empty() bool { return len(s.items) == 0 }

func (s *spill) put(cl *call) {
	s.items = append(s.items, cl)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *spill) take() (*call, bool) {
	if len(s.items) == 0 {
		return nil, false
	}
	cl := s.items[0]
	s.items[0] = nil
	s.items = s.items[1:]
	if len(s.items) == 0 {
		s.items = nil
	}
	return cl, true
}

// Follow implements task.SessionFollower: from now on, requests made while
// the connection's session is not session fail with task.ErrSessionExpired,
// unsent.
func (c *Conn) Follow(session int64) {
	c.mu.Lock()
	c.followed = session
	c.mu.Unlock()
}

package zkadapter

import (
	"errors"
	"sync"
	"unsafe"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// call is one request between Do and its done callback.
type call struct {
	req   task.Request
	done  func(task.Response)
	watch func(task.Event)
	gen   uint64 // the session generation it was issued in
	conn  uint64 // the connection it was issued on (Conn.live)
	op    wireOp
	ch    <-chan zkResponse // go-zookeeper's outcome channel, once queued

	marker bool // not a request: the sender's cue to send a connection's prelude
}

// Do implements task.Conn. It validates req (task.Validate, with the
// configured data limit, and the length on the wire against the server's
// packet limit: task.ErrDataTooLarge), and then:
//
//   - when the Conn is closed or closing, completes it with task.ErrClosed;
//   - when there is no usable session (before the first one, while
//     suspended, after an expiry until the next session), completes it with
//     task.ErrNotSent without handing it to go-zookeeper, which would queue
//     it and might send it on a session opened after an expiry;
//   - otherwise appends it to the Conn's send queue, from which one sender
//     goroutine hands requests to go-zookeeper in Do order (checking the
//     session again first), so the server sees them in Do order.
//
// done is always called exactly once, on the delivery goroutine (after
// Close has returned: on the caller's goroutine). Do never blocks on the
// network.
func (c *Conn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if done == nil {
		done = func(task.Response) {}
	}
	err := task.Validate(req, c.cfg.MaxDataSize)
	if err == nil && c.cfg.Root != "" {
		req = withRoot(c.cfg.Root, req)
	}
	if err == nil && packetSize(req) > c.cfg.MaxPacketSize {
		err = task.ErrDataTooLarge
	}
	if _, ok := req.(*task.CheckRequest); ok && err == nil {
		// ZooKeeper 3.8 has check only inside a multi.
		err = task.ErrUnimplemented
	}
	if err != nil {
		c.q.push(func() { done(task.Response{Err: err}) })
		return
	}
	if !task.WatchRequested(req) || watch == nil {
		watch = nil
	}
	c.mu.Lock()
	switch {
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
		c.mu.Unlock()
		c.q.push(func() { done(task.Response{Err: err}) })
		return
	}
	cl := &call{req: req, done: done, watch: watch, gen: c.gen, conn: c.live}
	c.pending[cl] = struct{}{}
	c.mu.Unlock()
	c.sendQ.put(cl)
}

// sender hands queued calls to go-zookeeper one by one, in Do order. It
// may block in go-zookeeper's queue (16 deep) while the connection is
// slow or down, never holding c.mu. Before the first call of each
// connection it queues the connection's prelude (credentials, then the
// watches to set again), so no request of the executor reaches a server
// before them.
func (c *Conn) sender(zc *zk.Conn) {
	defer c.wg.Done()
	var preluded uint64 // the connection whose prelude was queued
	for {
		cl, ok := c.sendQ.get(c.dialCtx.Done())
		if !ok {
			return
		}
		if cl.conn != preluded {
			if c.sendPrelude(zc, cl.conn) {
				preluded = cl.conn
			}
		}
		if cl.marker {
			continue
		}
		c.mu.Lock()
		_, live := c.pending[cl]
		switch {
		case !live: // completed by an expiry or Close meanwhile
		case cl.gen != c.gen:
			c.finish(cl, task.Response{Err: task.ErrSessionExpired})
			live = false
		case c.state != task.StateConnected || cl.conn != c.live:
			c.finish(cl, task.Response{Err: task.ErrNotSent})
			live = false
		}
		c.mu.Unlock()
		if !live {
			continue
		}
		cl.op = prepare(cl.req)
		cl.ch = zkQueueRequest(zc, cl.op.code, &guarded{c: c, conn: cl.conn, body: cl.op.req}, cl.op.res, c.recvFunc(cl))
		c.recvQ.put(cl)
	}
}

// guarded is the body of every request the Conn queues with go-zookeeper.
// go-zookeeper's send loop encodes each request right before writing it
// to the connection; guarded refuses to be encoded on any connection but
// the one its request was made on, and go-zookeeper then fails the
// request without writing it (errStale: certainly not applied). So a
// request is never written on another connection than its own, whatever
// go-zookeeper keeps in its queue across a reconnect: not on a new session
// after an expiry (where the server would apply it for a session that did
// not make it), and not on the same session after a reconnect, ahead of
// the prelude that sets the watches again.
type guarded struct {
	c    *Conn
	conn uint64
	body any
}

// errStale is the encoding error of a request held past its connection.
var errStale = errors.New("zkadapter: request held past its connection; not sent")

// Encode implements go-zookeeper's encoder interface.
func (g *guarded) Encode(buf []byte) (int, error) {
	if g.c.wireNo.Load() != g.conn {
		return 0, errStale
	}
	if e, ok := g.body.(interface{ Encode([]byte) (int, error) }); ok {
		return e.Encode(buf)
	}
	return zkEncodePacket(buf, g.body)
}

// recvFunc returns the function go-zookeeper's receive loop calls with
// cl's reply, decoded into cl.op.res (err is the server's error or a decode
// error). It completes cl and registers its watch right there, so that
// replies and notifications reach the delivery queue in the order they
// arrived from the server.
func (c *Conn) recvFunc(cl *call) func(unsafe.Pointer, unsafe.Pointer, error) {
	return func(_, hdr unsafe.Pointer, err error) {
		resp := cl.op.reply(err)
		set := cl.watch != nil && (err == nil || (err == zk.ErrNoNode && cl.op.watchOnNoNode))
		kind := cl.op.watch
		if err == zk.ErrNoNode {
			kind = watchExist
		}
		c.mu.Lock()
		c.sawZxid(hdr)
		if _, live := c.pending[cl]; !live || cl.gen != c.gen {
			c.mu.Unlock()
			return // the session expired or the Conn closed first
		}
		if set {
			c.addWatch(watchKey{cl.req.NodePath(), kind}, cl.watch)
		}
		if c.cfg.Root != "" {
			resp = stripResponse(c.cfg.Root, resp)
		}
		c.finish(cl, resp)
		c.mu.Unlock()
	}
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

// receiver waits, in send order, for the outcomes go-zookeeper sends on
// the calls' channels. A reply was handled by recvFunc already; what is
// left are the outcomes decided without a reply: connection loss
// (zk.ErrConnectionClosed or a network error: maybe applied), a request
// flushed from the queue (zk.ErrNoServer: not applied), an expired session,
// an encoding failure, Close.
func (c *Conn) receiver() {
	defer c.wg.Done()
	quit := c.dialCtx.Done()
	for {
		cl, ok := c.recvQ.get(quit)
		if !ok {
			return
		}
		var r zkResponse
		select {
		case r = <-cl.ch:
		case <-quit:
			return
		}
		c.mu.Lock()
		if _, live := c.pending[cl]; live {
			err := mapErr(r.err)
			if r.err == errStale {
				err = task.ErrNotSent
			}
			if r.err == nil {
				err = task.ErrConnectionLoss // unreachable: a reply always has recvFunc
			}
			if cl.gen != c.gen {
				err = task.ErrSessionExpired
			}
			c.finish(cl, task.Response{Err: err})
		}
		c.mu.Unlock()
	}
}

// finish removes cl from pending and queues its done. c.mu must be held.
func (c *Conn) finish(cl *call, resp task.Response) {
	delete(c.pending, cl)
	done := cl.done
	c.q.push(func() { done(resp) })
}

// fifo is an unbounded queue of calls for one consumer goroutine.
type fifo struct {
	mu    sync.Mutex
	items []*call
	wake  chan struct{}
}

func newFifo() *fifo { return &fifo{wake: make(chan struct{}, 1)} }

func (f *fifo) put(cl *call) {
	f.mu.Lock()
	f.items = append(f.items, cl)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// get takes the oldest call, waiting for one until quit is closed.
func (f *fifo) get(quit <-chan struct{}) (*call, bool) {
	for {
		f.mu.Lock()
		if len(f.items) > 0 {
			cl := f.items[0]
			f.items[0] = nil
			f.items = f.items[1:]
			f.mu.Unlock()
			return cl, true
		}
		f.mu.Unlock()
		select {
		case <-f.wake:
		case <-quit:
			return nil, false
		}
	}
}

// Follow implements task.SessionFollower: from now on, requests made while
// the connection's session is not session fail with task.ErrSessionExpired,
// unsent.
func (c *Conn) Follow(session int64) {
	c.mu.Lock()
	c.followed = session
	c.mu.Unlock()
}

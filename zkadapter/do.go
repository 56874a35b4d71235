package zkadapter

import (
	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// call is one request between Do and its done callback.
type call struct {
	req   task.Request
	done  func(task.Response)
	watch func(task.Event)
	gen   uint64 // the session generation it was sent in
}

// Do implements task.Conn. It validates req (task.Validate, with the
// configured data limit), and then:
//
//   - when the Conn is closed or closing, completes it with task.ErrClosed;
//   - when there is no usable session (before the first one, while
//     suspended, after an expiry until the next session), completes it with
//     task.ErrNotSent without handing it to go-zookeeper, which would queue
//     it and might send it on a session opened after an expiry;
//   - otherwise runs the blocking go-zookeeper call on a goroutine of its
//     own and completes with its outcome, unless the session expired in the
//     meantime: then with task.ErrSessionExpired, at the moment the expiry
//     is seen (before the next StateConnected).
//
// done is always called exactly once, on the delivery goroutine (after
// Close has returned: on the caller's goroutine).
func (c *Conn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if done == nil {
		done = func(task.Response) {}
	}
	if err := task.Validate(req, c.cfg.MaxDataSize); err != nil {
		c.q.push(func() { done(task.Response{Err: err}) })
		return
	}
	if !task.WatchRequested(req) {
		watch = nil
	}
	c.mu.Lock()
	var err error
	switch {
	case c.closing:
		err = task.ErrClosed
	case c.state != task.StateConnected || c.zc == nil:
		err = task.ErrNotSent
	}
	if err != nil {
		c.mu.Unlock()
		c.q.push(func() { done(task.Response{Err: err}) })
		return
	}
	defer c.mu.Unlock()
	cl := &call{req: req, done: done, watch: watch, gen: c.gen}
	c.pending[cl] = struct{}{}
	zc := c.zc
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		resp, zerr, ch := run(zc, req)
		c.complete(cl, resp, zerr, ch)
	}()
}

// complete delivers the outcome of cl unless Close or an expiry already
// did. ch is the watch channel go-zookeeper returned, if any.
func (c *Conn) complete(cl *call, resp task.Response, zerr error, ch <-chan zk.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[cl]; !ok {
		return // already completed by Close or expiry; the watch is dropped
	}
	if cl.gen != c.gen {
		// Unreachable while expire fails pending calls, kept as the gate.
		c.finish(cl, task.Response{Err: task.ErrSessionExpired})
		return
	}
	if zerr != nil {
		resp = task.Response{Err: mapErr(zerr)}
	}
	if ch != nil && cl.watch != nil {
		c.addWatch(cl, ch)
	}
	c.finish(cl, resp)
}

// finish removes cl from pending and queues its done. c.mu must be held.
func (c *Conn) finish(cl *call, resp task.Response) {
	delete(c.pending, cl)
	done := cl.done
	c.q.push(func() { done(resp) })
}

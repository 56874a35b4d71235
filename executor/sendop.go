package executor

import "github.com/zkflow/zkflow/task"

// sendOp is one request between Send and the executor's hand-over of its
// outcome (and, if it set a watch, of its notifications): its done and
// notify, bound once to the op, are what Send hands the Conn, and the op
// is the Receiver and the Watcher of what they post. Ops are reused, from
// a free list on the executor goroutine, so that a request makes no
// function of its own. An op is free again once the Conn can call neither
// function any more: its outcome has come (the Conn calls done exactly
// once) and its watch, if it set one, was a one-time watch that has
// fired (the Conn calls its watch at most once). An op whose watch never
// fires, or is persistent, is left to the garbage collector.
type sendOp struct {
	e      *Executor
	done   func(task.Response) // op.complete
	notify func(task.Event)    // op.fire, when a watch is set; nil otherwise
	fire1  func(task.Event)    // op.fire, made the first time the op sets a watch
	next   *sendOp             // the next free op

	r        task.Receiver
	w        task.Watcher // the watch's Watcher, if the request sets one
	oneTime  bool         // the watch fires at most once
	received bool         // the outcome has reached r
	fired    bool         // the one-time watch's notification has reached w

	// An observed request's (sendObserved).
	o *task.Observer
	d task.OpDone
}

// newOp returns a free op for req, r and w (nil: req sets no watch).
// Executor goroutine.
func (e *Executor) newOp(req task.Request, r task.Receiver, w task.Watcher) *sendOp {
	op := e.freeOps
	if op == nil {
		op = &sendOp{e: e}
		op.done = op.complete
	} else {
		e.freeOps, op.next = op.next, nil
	}
	op.r = r
	if w != nil {
		if op.fire1 == nil {
			op.fire1 = op.fire
		}
		op.w, op.notify, op.oneTime = w, op.fire1, oneTimeWatch(req)
	}
	return op
}

// oneTimeWatch reports whether req's watch is a one-time watch (Conn:
// called at most once); any other (AddWatchRequest's) may fire again.
func oneTimeWatch(req task.Request) bool {
	switch req.(type) {
	case *task.ExistsRequest, *task.GetDataRequest, *task.GetChildrenRequest:
		return true
	}
	return false
}

// complete is done, on the goroutine the Conn calls it on: the outcome
// joins the inbox with the op as its Receiver. The op must not be
// touched after postOutcome: the executor may be reusing it already.
func (op *sendOp) complete(resp task.Response) {
	if op.o != nil {
		op.observeEnd(resp.Err)
	}
	op.e.postOutcome(op, &resp)
}

// fire is notify, on the goroutine the Conn calls it on: the event joins
// the inbox with the op as its Watcher. As in complete, the op must not
// be touched after postNotice.
func (op *sendOp) fire(ev task.Event) { op.e.postNotice(op, &ev) }

// Receive hands resp to the request's Receiver, freeing the op if the
// Conn is done with it. Executor goroutine.
func (op *sendOp) Receive(resp task.Response) {
	r := op.r
	if r == nil {
		return // a second outcome before reuse (a Conn that broke its contract): dropped, as a Receiver drops it
	}
	op.r, op.received = nil, true
	op.release()
	r.Receive(resp)
}

// Notify hands ev to the watch's Watcher, freeing the op after a one-time
// watch's notification if the Conn is done with it. Executor goroutine.
func (op *sendOp) Notify(ev task.Event) {
	w := op.w
	if w == nil || op.fired {
		return // a one-time watch's second notification (a Conn that broke its contract): dropped
	}
	if op.oneTime {
		op.fired = true
		op.release()
	}
	w.Notify(ev)
}

// release puts the op on the free list once the Conn can call neither of
// its functions again. The functions and the executor stay: they are the
// op's for good.
func (op *sendOp) release() {
	if !op.received || (op.w != nil && !op.fired) {
		return
	}
	e := op.e
	op.notify, op.r, op.w = nil, nil, nil
	op.oneTime, op.received, op.fired = false, false, false
	op.o, op.d = nil, task.OpDone{}
	op.next, e.freeOps = e.freeOps, op
}

package executor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zkflow/zkflow/task"
)

// What the executor tells Config.Observer, and where (task.Observer). With
// no Observer each site is one nil check: Send, drain, publish, and a
// flow's start and end.

// Observer returns the executor's Observer (nil if none), with every field
// set: combinators.Retry reports to it through task.ObserverOf. It is
// Config.Observer's: the Observer the executor makes for itself to log
// operations at Debug (Config.Logger) is not handed out.
func (e *Executor) Observer() *task.Observer { return e.userObs }

// sendObserved is Send with an Observer: OnOpStart before the connection
// has the request, OnOpEnd on the goroutine that completes it, before the
// outcome is queued for its Receiver.
func (e *Executor) sendObserved(o *task.Observer, req task.Request, r task.Receiver, watch task.Watcher) {
	e.opSeq++
	op := e.newOp(req, r, watch)
	op.o = o
	op.d.OpInfo = task.OpInfo{
		Seq:     e.opSeq,
		Req:     req,
		Session: e.session.ID,
		Flow:    task.ReceiverFlow(r),
		Start:   e.clock.Now(),
	}
	op.d.Tag = o.OnOpStart(op.d.OpInfo)
	if e.conn == nil || e.state == task.StateClosed || e.stopAsked() {
		e.refuseObserved(op, task.ErrClosed)
		return
	}
	if e.state == task.StateSuspended {
		e.refuseObserved(op, task.ErrNotSent) // as in Send
		return
	}
	e.sendMu.Lock() // the send gate, as in Send
	if e.closeReq.Load() {
		e.sendMu.Unlock()
		e.refuseObserved(op, task.ErrClosed)
		return
	}
	e.doSend(req, op.done, op.notify)
}

// refuseObserved fails an observed request with err, unsent.
func (e *Executor) refuseObserved(op *sendOp, err error) {
	op.observeEnd(err)
	op.w, op.notify = nil, nil // no watch is set
	e.tasks.push(job{x: op}, &task.Response{Err: err})
}

// observeEnd reports an observed request's outcome (err) to OnOpEnd, on
// the goroutine that has it.
func (op *sendOp) observeEnd(err error) {
	op.d.End = op.e.clock.Now()
	op.d.Err = err
	op.o.OnOpEnd(op.d)
}

// observeSession reports the transition ev makes to the Observer and logs
// it at Debug. Executor goroutine.
func (e *Executor) observeSession(ev task.Event, sess task.Session) {
	id := ev.SessionID
	if ev.State == task.StateConnected {
		id = sess.ID
	}
	if o := e.obs; o != nil {
		now := e.clock.Now()
		o.OnSession(task.SessionChange{From: e.obsState, To: ev.State, Session: sess, SessionID: id, At: now, Since: e.obsSince})
		e.obsState, e.obsSince = ev.State, now
	}
	if e.log.Enabled(context.Background(), slog.LevelDebug) {
		e.log.Debug("zkflow: session", "state", ev.State.String(), "session", sessionAttr(id), "epoch", sess.Epoch)
	}
}

// flowStarted marks the flow's scope (c, nil when it never started) and
// tells the Observer. f, if not nil, is where the FlowInfo goes (the
// flow's observedRun). Executor goroutine.
func (e *Executor) flowStarted(o *task.Observer, c *task.Scope, f *task.FlowInfo) *task.FlowInfo {
	e.flowSeq++
	if f == nil {
		f = new(task.FlowInfo)
	}
	*f = task.FlowInfo{ID: e.flowSeq, Session: *e.session, Start: e.clock.Now()}
	f.Tag = o.OnFlowStart(*f)
	if c != nil {
		c.SetFlow(f)
	}
	return f
}

func (e *Executor) flowEnded(f *task.FlowInfo, err error) {
	e.obs.OnFlowEnd(task.FlowDone{FlowInfo: *f, End: e.clock.Now(), Err: err})
}

// sessionAttr formats a session id as ZooKeeper's logs do.
func sessionAttr(id int64) string { return fmt.Sprintf("0x%x", id) }

// logOperations returns obs (nil: an Observer doing nothing) with
// OnOpEnd also logging each outcome at Debug.
func logOperations(l *slog.Logger, obs *task.Observer) *task.Observer {
	if obs == nil {
		obs = (&task.Observer{}).Filled()
	}
	o := *obs
	next := o.OnOpEnd
	o.OnOpEnd = func(d task.OpDone) {
		next(d)
		var flow uint64
		if d.Flow != nil {
			flow = d.Flow.ID
		}
		attrs := []slog.Attr{
			slog.String("op", d.Req.OpName()), slog.String("path", d.Req.NodePath()),
			slog.String("session", sessionAttr(d.Session)), slog.Uint64("flow", flow), slog.Duration("latency", d.Latency()),
		}
		if d.Err != nil {
			attrs = append(attrs, slog.Any("err", d.Err))
		}
		l.LogAttrs(context.Background(), slog.LevelDebug, "zkflow: operation", attrs...)
	}
	return &o
}

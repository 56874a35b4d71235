package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// Contexts that end in an outage (Config.OutageEnds, ContextOutage): a
// context drawn for it waits for its client's n-th request from now; just
// after the client sends it, the world cuts the client off, and the
// context ends 0 to 2 steps after the client's executor sees the loss.
// A call whose request the cut takes is left waiting for a reconnect as
// its caller's context ends: the schedule in which a release that lost
// its delete must still delete.

// outageCut is a context waiting for its ContextOutage: n more requests
// of its client before the cut (World.cuts), then skip more steps after
// the client sees the loss (World.outage).
type outageCut struct {
	ctx  *actorCtx
	n    int
	skip int
}

// cutLater makes c a context that ends in an outage (CancelAfterSteps)
// and returns its cancel.
func (w *World) cutLater(c *actorCtx) context.CancelFunc {
	s := w.act
	s.cuts = append(s.cuts, outageCut{ctx: c, n: w.outage.IntN(8), skip: w.outage.IntN(3)})
	t := w.Clock.AfterFunc(w.timeout, func() {
		if !c.ended.Load() {
			s.cancels = append(s.cancels, stepCancel{at: s.steps, ctx: c, err: context.Canceled})
		}
	})
	return func() { t.Stop(); c.cancel(context.Canceled) }
}

// outageConn is a client's connection in a world with Config.OutageEnds:
// it counts the requests the client sends for the contexts waiting for a
// ContextOutage (sent).
type outageConn struct {
	task.Conn
	w *World
	i int
}

func (c *outageConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if s := c.w.act; s != nil && len(s.cuts) > 0 {
		c.w.sent(c.i)
	}
	if s := c.w.act; s != nil && len(s.after) > 0 && isWrite(req) {
		c.w.cutAfter(c.i)
	}
}

// PacketRoom passes the question on (task.PacketSizer).
func (c *outageConn) PacketRoom(req task.Request) int { return packetRoom(c.Conn, req) }

// The aftermath of an outage: a context an outage ended leaves its call's
// clean-up to go on in the background (a release's delete, a take's
// give-back, an undo), sent once the client is back. In one such end in
// two, drawn from a stream of its own (World.aftermath), the world cuts
// the client off again just after it sends its first to fourth write
// from then (a create, delete, set, setACL or multi: a clean-up writes), applied
// in two cuts of three: the schedule in which the clean-up's reply is
// lost and its retry finds its own work done.

// afterCut is a client to cut at its n-th write from now.
type afterCut struct {
	client int
	n      int
}

// aftermathOf draws the aftermath of c, which an outage ends now.
func (w *World) aftermathOf(c *actorCtx) {
	if w.aftermath == nil || w.aftermath.IntN(2) != 0 {
		return
	}
	w.act.after = append(w.act.after, afterCut{client: c.a.client, n: w.aftermath.IntN(4)})
}

// Follow passes the executor's session on (task.SessionFollower).
func (c *outageConn) Follow(session int64) {
	if f, ok := c.Conn.(task.SessionFollower); ok {
		f.Follow(session)
	}
}

// sent counts a request client i just sent for the contexts waiting for
// a ContextOutage; at the one a context waits for, in the faults phase
// with the client connected, the world cuts the client off (the request
// is in flight: applied or not, drawn) for less than its session
// timeout, and the context waits for the client to see it (connLost).
func (w *World) sent(i int) {
	s := w.act
	if w.inj == nil || !w.inj.active || i >= len(w.Conns) {
		return
	}
	keep := s.cuts[:0]
	var due []outageCut
	for _, o := range s.cuts {
		switch {
		case o.ctx.ended.Load():
		case o.ctx.a.client != i:
			keep = append(keep, o)
		case o.n > 0:
			o.n--
			keep = append(keep, o)
		default:
			due = append(due, o)
		}
	}
	clear(s.cuts[len(keep):])
	s.cuts = keep
	for _, o := range due {
		if !w.Conns[i].Connected() {
			// Cut off already (the first of two cuts): it ends in this
			// outage.
			s.cancels = append(s.cancels, stepCancel{at: s.steps + 1 + uint64(o.skip), ctx: o.ctx, err: context.Canceled, outage: true})
			continue
		}
		d := time.Millisecond + time.Duration(w.outage.Int64N(int64(w.timeout*7/10)))
		applied := w.outage.IntN(2) == 0
		if applied {
			w.inj.outageLag(i)
		}
		w.Server.Partition(w.Conns[i], d, applied)
		w.inj.fired[ContextOutage]++
		w.inj.note(ContextOutage, i, d, applied, fmt.Sprintf("client %d for %s applied=%v, as actor %d's context ends", i, d, applied, o.ctx.a.id))
		w.inj.operatorInCut(i, d)
		s.outage = append(s.outage, o)
	}
}

// cutAfter counts a write client i just sent for the aftermath cuts
// waiting for it, and cuts the client off at the one a cut waits for (in
// the faults phase, the client connected: else the cut is dropped).
func (w *World) cutAfter(i int) {
	s := w.act
	if w.inj == nil || !w.inj.active || i >= len(w.Conns) {
		return
	}
	fire := false
	keep := s.after[:0]
	for _, a := range s.after {
		switch {
		case a.client != i:
			keep = append(keep, a)
		case a.n > 0:
			a.n--
			keep = append(keep, a)
		default:
			fire = true
		}
	}
	clear(s.after[len(keep):])
	s.after = keep
	if !fire || !w.Conns[i].Connected() {
		return
	}
	d := time.Millisecond + time.Duration(w.aftermath.Int64N(int64(w.timeout*7/10)))
	applied := w.aftermath.IntN(3) != 0
	if applied {
		w.inj.outageLag(i)
	}
	w.Server.Partition(w.Conns[i], d, applied)
	w.inj.fired[ContextOutage]++
	w.inj.note(ContextOutage, i, d, applied, fmt.Sprintf("client %d for %s applied=%v, after an outage ended a context", i, d, applied))
	w.inj.operatorInCut(i, d)
}

// connLost is called when client i's executor sees its connection lost
// (Config.OutageEnds): the contexts cut off with client i end skip+1
// steps from now.
func (w *World) connLost(i int) {
	s := w.act
	if s == nil || len(s.outage) == 0 {
		return
	}
	keep := s.outage[:0]
	for _, o := range s.outage {
		switch {
		case o.ctx.ended.Load():
		case o.ctx.a.client != i:
			keep = append(keep, o)
		default:
			s.cancels = append(s.cancels, stepCancel{at: s.steps + 1 + uint64(o.skip), ctx: o.ctx, err: context.Canceled, outage: true})
		}
	}
	clear(s.outage[len(keep):])
	s.outage = keep
}

// endCuts ends, once the faults have stopped, the contexts still waiting
// for their ContextOutage, at the next step, as if drawn for it.
func (w *World) endCuts() {
	s := w.act
	for _, o := range s.cuts {
		if !o.ctx.ended.Load() {
			s.cancels = append(s.cancels, stepCancel{at: s.steps + 1, ctx: o.ctx, err: context.Canceled})
		}
	}
	clear(s.cuts)
	s.cuts = s.cuts[:0]
	s.after = s.after[:0]
}

// isWrite reports whether req changes the tree (or may: a multi).
func isWrite(req task.Request) bool {
	switch req.(type) {
	case *task.CreateRequest, *task.DeleteRequest, *task.SetDataRequest, *task.MultiRequest, *task.SetACLRequest:
		return true
	}
	return false
}

// packetRoom is conn's task.PacketSizer answer, or the room under
// task.MaxPacketSize with no root when conn cannot say.
func packetRoom(conn task.Conn, req task.Request) int {
	if ps, ok := conn.(task.PacketSizer); ok {
		return ps.PacketRoom(req)
	}
	return task.MaxPacketSize - reqcheck.PacketSize(req)
}

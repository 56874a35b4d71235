package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Blinks (Config.Blinks, the blink class): a client that has just come
// back (its executor heard StateConnected in the faults phase) is, one
// time in three, cut off again just after the server hands it its first,
// second or third reply from then, before the continuation waiting for
// that reply has run, for less than its session timeout or, one time in
// three, for 1.2 to 3 times it (the session expires meanwhile). The
// requests in flight are applied or not, drawn; when applied, the session
// may come back through a member behind them, as after a short partition
// (reconnectLag). The reply is held with the executor's other work while
// the connection is down and handled after the next reconnect: the
// schedule in which a check made on coming back (is my
// node still mine?) is answered, and the answer is stale by the time it
// is read.
//
// Operator in a cut (the operator-in-cut class, with the operator class
// on): when a client is cut off for less than its session timeout (a
// short partition, a blink, a context's outage), one time in three an
// operator deletes, at an instant inside the cut, a leaf under
// Scenario.Operator that the client's session owns (an ephemeral), and
// one time in two creates it again as operate does: the client comes
// back to find what it held gone, another client perhaps granted it
// meanwhile.

// drawBlinks draws, on a stream of its own, whether a seed with faults
// has blinks (Plan.Blinks): one in two.
func drawBlinks(seed uint64) bool {
	return rand.New(rand.NewPCG(seed, 0x424c_494e_4b53_2121)).IntN(2) == 0
}

// blinkConn is a client's connection in a world with Config.Blinks: it
// counts the replies handed to the client while a blink waits for one.
type blinkConn struct {
	task.Conn
	raw *fakezk.Conn
	w   *World
	i   int
}

func (c *blinkConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if c.w.blinkAt[c.i] > 0 && c.w.Conns[c.i] == c.raw {
		inner := done
		done = func(resp task.Response) {
			inner(resp)
			c.w.replied(c.i, c.raw)
		}
	}
	c.Conn.Do(req, done, watch)
}

// PacketRoom passes the question on (task.PacketSizer).
func (c *blinkConn) PacketRoom(req task.Request) int { return packetRoom(c.Conn, req) }

// Follow passes the executor's session on (task.SessionFollower).
func (c *blinkConn) Follow(session int64) {
	if f, ok := c.Conn.(task.SessionFollower); ok {
		f.Follow(session)
	}
}

// reconnected draws a blink for client i, whose executor has just heard
// it is connected.
func (w *World) reconnected(i int) {
	if w.blink == nil || w.inj == nil || !w.inj.active || i >= len(w.blinkAt) {
		return
	}
	if w.blink.IntN(3) == 0 {
		w.blinkAt[i] = 1 + w.blink.IntN(3)
	} else {
		w.blinkAt[i] = 0
	}
}

// replied counts a reply just handed to client i (over raw) for its
// blink, and cuts the client off at the one the blink waits for.
func (w *World) replied(i int, raw *fakezk.Conn) {
	if w.blinkAt[i] == 0 || w.Conns[i] != raw {
		return
	}
	if w.inj == nil || !w.inj.active || !raw.Connected() {
		w.blinkAt[i] = 0 // the faults are over, or another cut came first
		return
	}
	if w.blinkAt[i]--; w.blinkAt[i] > 0 {
		return
	}
	d := time.Millisecond + time.Duration(w.blink.Int64N(int64(w.timeout*7/10)))
	if w.blink.IntN(3) == 0 {
		d = w.timeout*6/5 + time.Duration(w.blink.Int64N(int64(w.timeout*9/5)+1)) // the session expires
	}
	applied := w.blink.IntN(2) == 0
	if applied {
		w.inj.reconnectLag(i) // as a short partition's: back through a member behind
	}
	w.Server.Partition(raw, d, applied)
	w.inj.fired[Blink]++
	w.inj.note(Blink, i, d, applied, fmt.Sprintf("client %d for %s applied=%v, just after a reply on coming back", i, d, applied))
	if d < w.timeout {
		w.inj.operatorInCut(i, d)
	}
}

// operatorInCut draws, for client i just cut off for d, whether an
// operator deletes one of its session's nodes during the cut, and when.
func (in *injector) operatorInCut(i int, d time.Duration) {
	if in.ocrng == nil || i >= len(in.w.Conns) || in.ocrng.IntN(3) != 0 {
		return
	}
	w := in.w
	conn := w.Conns[i]
	sess := conn.SessionID()
	at := time.Duration(in.ocrng.Int64N(int64(d)))
	w.Clock.AfterFunc(at, func() {
		if !in.active || w.Conns[i] != conn || sess == 0 {
			return
		}
		what, ok := in.operateOn(in.ocrng, func(st task.Stat) bool { return st.EphemeralOwner == sess })
		if !ok {
			return
		}
		in.fired[OperatorInCut]++
		in.note(OperatorInCut, i, 0, false, fmt.Sprintf("while client %d is cut off: %s", i, what))
	})
}

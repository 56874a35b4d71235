package conformance

import (
	"time"

	"github.com/zkflow/zkflow/task"
)

func sessionCases() []Case {
	return []Case{
		{"session/connected-event", "Start reports StateConnected with a session id and a negotiated timeout", func(e *Env) {
			ev := e.C.States()[0]
			e.True(ev.State == task.StateConnected && ev.SessionID != 0 && ev.Timeout > 0, "first event %v", ev)
		}},
		{"session/distinct-ids", "two connections get two sessions", func(e *Env) {
			c2 := e.NewClient()
			e.True(c2.SessionID() != e.C.SessionID(), "same session id %#x", c2.SessionID())
		}},
		{"session/timeout-min", "a tiny requested timeout is raised to the server's minimum (2 ticks)", func(e *Env) {
			c := newClient(e.T, e.Target, time.Millisecond)
			e.True(c.States()[0].Timeout > time.Millisecond, "timeout %s", c.States()[0].Timeout)
		}},
		{"session/timeout-max", "a huge requested timeout is lowered to the server's maximum (20 ticks)", func(e *Env) {
			c := newClient(e.T, e.Target, 100*time.Hour)
			e.True(c.States()[0].Timeout < 100*time.Hour, "timeout %s", c.States()[0].Timeout)
		}},
		{"session/close-event-last", "Close reports StateClosed, and nothing after it", func(e *Env) {
			c2 := e.NewClient()
			c2.Conn.Close()
			c2.WaitState(task.StateClosed, 1)
			c2.Conn.Close()
			e.Target.Settle()
			st := c2.States()
			e.Eq(st[len(st)-1].State, task.StateClosed, "last event")
			e.Eq(len(st), 2, "events")
		}},
		{"session/do-after-close", "a request after Close fails with ErrClosed", func(e *Env) {
			c2 := e.NewClient()
			c2.Conn.Close()
			e.Err(c2.Do(&task.ExistsRequest{Path: "/"}).Err, task.ErrClosed, "exists")
		}},
		{"session/expire-events", "an expired client sees StateExpired and then a new session's StateConnected", func(e *Env) {
			x := Need[Expirer](e)
			c2 := e.NewClient()
			old := c2.SessionID()
			x.Expire(e.T, c2.Conn)
			c2.WaitState(task.StateExpired, 1)
			ev := c2.WaitState(task.StateConnected, 2)
			e.True(ev.SessionID != old && ev.SessionID != 0, "new session %#x old %#x", ev.SessionID, old)
		}},
		{"session/expire-others-unaffected", "one session's expiry leaves another's ephemerals", func(e *Env) {
			x := Need[Expirer](e)
			c2 := e.NewClient()
			e.Create(e.P("mine"), "", task.Ephemeral)
			x.Expire(e.T, c2.Conn)
			c2.WaitState(task.StateExpired, 1)
			e.True(e.Exists(e.P("mine")), "other session's ephemeral gone")
		}},
		{"session/drop-suspends", "a dropped connection reports Suspended then Connected with the same session", func(e *Env) {
			d := Need[Dropper](e)
			id := e.C.SessionID()
			d.Drop(e.T, e.C.Conn, false)
			e.C.WaitState(task.StateSuspended, 1)
			ev := e.C.WaitState(task.StateConnected, 2)
			e.Eq(ev.SessionID, id, "session after reconnect")
		}},
		{"session/drop-in-flight-applied", "a request in flight when the connection drops may have been applied: connection loss, node there", func(e *Env) {
			d := Need[Dropper](e)
			if h, ok := e.Target.(InFlight); !ok || !h.HoldsInFlight() {
				e.T.Skip("target applies requests at once")
			}
			p := e.C.Send(create(e.P("a"), task.Persistent))
			d.Drop(e.T, e.C.Conn, true)
			e.Err(p.Wait().Err, task.ErrConnectionLoss, "create")
			e.C.WaitState(task.StateConnected, 2)
			e.True(e.Exists(e.P("a")), "applied create missing")
		}},
		{"session/drop-in-flight-lost", "a request in flight may not have been applied: connection loss, node absent", func(e *Env) {
			d := Need[Dropper](e)
			if h, ok := e.Target.(InFlight); !ok || !h.HoldsInFlight() {
				e.T.Skip("target applies requests at once")
			}
			p := e.C.Send(create(e.P("a"), task.Persistent))
			d.Drop(e.T, e.C.Conn, false)
			e.Err(p.Wait().Err, task.ErrConnectionLoss, "create")
			e.C.WaitState(task.StateConnected, 2)
			e.True(!e.Exists(e.P("a")), "unapplied create present")
		}},
		{"session/partition-expires", "a client cut off longer than its session timeout finds its session expired", func(e *Env) {
			p := Need[Partitioner](e)
			c2 := e.NewClient()
			c2.Do(create(e.P("e"), task.Ephemeral))
			p.Partition(e.T, c2.Conn, 3*DefaultTimeout)
			p.Advance(2 * DefaultTimeout)
			e.True(!e.Exists(e.P("e")), "ephemeral survived the timeout")
			p.Advance(2 * DefaultTimeout)
			c2.WaitState(task.StateExpired, 1)
		}},
		{"session/partition-short-survives", "a client cut off for less than its timeout keeps its session", func(e *Env) {
			p := Need[Partitioner](e)
			id := e.C.SessionID()
			p.Partition(e.T, e.C.Conn, DefaultTimeout/2)
			p.Advance(DefaultTimeout)
			ev := e.C.WaitState(task.StateConnected, 2)
			e.Eq(ev.SessionID, id, "session")
			e.True(len(e.C.States()) == 3, "events %v", e.C.States())
		}},
		{"session/not-sent-while-down", "a request made while the connection is down fails with ErrNotSent or ErrConnectionLoss", func(e *Env) {
			p := Need[Partitioner](e)
			p.Partition(e.T, e.C.Conn, DefaultTimeout/2)
			e.C.WaitState(task.StateSuspended, 1)
			r := e.C.Do(&task.ExistsRequest{Path: "/"})
			e.True(r.Err == task.ErrNotSent || r.Err == task.ErrConnectionLoss, "error %v", r.Err)
			p.Advance(DefaultTimeout)
		}},
		{"session/ordered-responses", "one session's responses arrive in request order", func(e *Env) {
			var ps []*Pending
			for i := range 20 {
				if i%2 == 0 {
					ps = append(ps, e.C.Send(create(e.P("n-"), task.PersistentSequential)))
				} else {
					ps = append(ps, e.C.Send(&task.ExistsRequest{Path: e.Base}))
				}
			}
			last := int64(0)
			for i, p := range ps {
				r := p.Wait()
				if i%2 == 0 {
					e.True(r.Stat.Czxid > last, "create %d czxid %d not after %d", i, r.Stat.Czxid, last)
					last = r.Stat.Czxid
				}
			}
		}},
	}
}

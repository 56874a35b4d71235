package conformance

import (
	"github.com/zkflow/zkflow/task"
)

func ephemeralCases() []Case {
	return []Case{
		{"ephemeral/owner", "an ephemeral node's ephemeralOwner is its session's id", func(e *Env) {
			_, st := e.Create(e.P("e"), "", task.Ephemeral)
			e.Eq(st.EphemeralOwner, e.C.SessionID(), "owner")
		}},
		{"ephemeral/no-children-stat", "an ephemeral node reports numChildren 0", func(e *Env) {
			_, st := e.Create(e.P("e"), "", task.Ephemeral)
			e.Eq(st.NumChildren, int32(0), "numChildren")
		}},
		{"ephemeral/gone-on-close", "closing the session removes its ephemerals", func(e *Env) {
			c2 := e.NewClient()
			c2.Do(create(e.P("e"), task.Ephemeral))
			c2.Conn.Close()
			e.Target.Settle()
			e.C.Barrier()
			e.True(!e.Exists(e.P("e")), "ephemeral survived close")
		}},
		{"ephemeral/persistent-stays-on-close", "closing a session keeps its persistent nodes", func(e *Env) {
			c2 := e.NewClient()
			c2.Do(create(e.P("p"), task.Persistent))
			c2.Conn.Close()
			e.Target.Settle()
			e.True(e.Exists(e.P("p")), "persistent node gone")
		}},
		{"ephemeral/other-session-sees", "another session sees the ephemeral with the owner's id", func(e *Env) {
			c2 := e.NewClient()
			c2.Do(create(e.P("e"), task.Ephemeral))
			e.Eq(e.Stat(e.P("e")).EphemeralOwner, c2.SessionID(), "owner")
		}},
		{"ephemeral/other-session-deletes", "another session may delete an ephemeral", func(e *Env) {
			c2 := e.NewClient()
			c2.Do(create(e.P("e"), task.Ephemeral))
			e.Delete(e.P("e"))
		}},
		{"ephemeral/close-parent-pzxid", "the ephemerals' removal moves the parent's pzxid and numChildren", func(e *Env) {
			c2 := e.NewClient()
			r := c2.Do(create(e.P("e"), task.Ephemeral))
			before := e.Stat(e.Base)
			c2.Conn.Close()
			e.Target.Settle()
			e.C.Barrier()
			after := e.Stat(e.Base)
			e.True(after.Pzxid > r.Stat.Czxid && after.NumChildren == before.NumChildren-1, "parent %+v", after)
		}},
		{"ephemeral/gone-on-expiry", "an expired session's ephemerals are removed", func(e *Env) {
			x := Need[Expirer](e)
			c2 := e.NewClient()
			c2.Do(create(e.P("e"), task.Ephemeral))
			x.Expire(e.T, c2.Conn)
			c2.WaitState(task.StateExpired, 1)
			e.True(!e.Exists(e.P("e")), "ephemeral survived expiry")
		}},
		{"ephemeral/survives-drop", "a dropped connection that reconnects keeps its session and ephemerals", func(e *Env) {
			d := Need[Dropper](e)
			_, st := e.Create(e.P("e"), "", task.Ephemeral)
			d.Drop(e.T, e.C.Conn, false)
			e.C.WaitState(task.StateConnected, 2)
			e.Eq(e.C.SessionID(), st.EphemeralOwner, "session after reconnect")
			e.True(e.Exists(e.P("e")), "ephemeral lost on drop")
		}},
		{"ephemeral/new-session-owner", "after expiry the new session's ephemerals carry the new id", func(e *Env) {
			x := Need[Expirer](e)
			c2 := e.NewClient()
			old := c2.SessionID()
			x.Expire(e.T, c2.Conn)
			c2.WaitState(task.StateConnected, 2)
			r := c2.Do(create(e.P("e"), task.Ephemeral))
			e.True(r.Err == nil && r.Stat.EphemeralOwner == c2.SessionID() && c2.SessionID() != old, "owner %#x new %#x old %#x (%v)", r.Stat.EphemeralOwner, c2.SessionID(), old, r.Err)
		}},
	}
}

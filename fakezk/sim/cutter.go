package sim

import (
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Cutter makes the lost reply of one chosen request: wrapping a client's
// connection (Wrap), it cuts that client off the server just after the
// client sends the first request Match accepts once Armed, with the
// requests in flight applied first if Applied. For less than the session
// timeout the session lives on while the others act, and the client hears
// connection loss when the partition heals: a directed test of what a
// recipe does with a reply it never got. Cut says it happened. Set World
// before the request is sent.
//
// With Lag, the session comes back through a member that has not applied
// the requests the cut applied, and lags for Lag without drifting
// (Server.LagAtReconnect, held; the server keeps history from the cut
// on): ZooKeeper lets a session reconnect to any member that has applied
// the last zxid its client saw. A plain read there misses those writes
// until a sync or a write of the session catches the member up.
type Cutter struct {
	World   *World
	Match   func(task.Request) bool
	For     time.Duration // 0: a third of the world's session timeout
	Applied bool
	Lag     time.Duration
	Armed   bool
	Cut     bool
}

// Wrap wraps conn (for Config.Wrap, for the one client to cut).
func (c *Cutter) Wrap(conn *fakezk.Conn) task.Conn { return &cutConn{Conn: conn, c: c} }

type cutConn struct {
	*fakezk.Conn
	c *Cutter
}

func (cc *cutConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	cc.Conn.Do(req, done, watch)
	c := cc.c
	if c.Armed && !c.Cut && c.Match(req) {
		c.Cut = true
		d := c.For
		if d == 0 {
			d = c.World.Timeout() / 3
		}
		if c.Lag > 0 {
			c.World.Server.KeepHistory()
			c.World.Server.LagAtReconnect(cc.Conn, c.Lag, true)
		}
		c.World.Server.Partition(cc.Conn, d, c.Applied)
	}
}

// Deletes matches a request that deletes path: a delete, or a multi with
// a delete of it among its ops.
func Deletes(path string) func(task.Request) bool {
	return func(req task.Request) bool {
		switch r := req.(type) {
		case *task.DeleteRequest:
			return r.Path == path
		case *task.MultiRequest:
			for _, op := range r.Ops {
				if d, ok := op.(*task.DeleteRequest); ok && d.Path == path {
					return true
				}
			}
		}
		return false
	}
}

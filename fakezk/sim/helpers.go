package sim

import (
	"errors"
	"math/rand/v2"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Counts is what the faults did to a scenario's clients, summed over
// seeds, so a test can show they bit.
type Counts struct {
	Losses   int // responses with connection loss (counted by LostReplies)
	Expiries int // flows that failed with session expiry and ran again (Across)
}

// AfterSend wraps a client's connection (in Scenario.Wrap) so that sent
// is told of each request just after the connection has taken it: the
// hook where a scenario aims a fault at a request of its choosing
// (Trial.AimRestart, DelayNow, ACLNow...), with the request in flight.
func AfterSend(conn *fakezk.Conn, sent func(req task.Request)) task.Conn {
	return &afterSend{Conn: conn, sent: sent}
}

type afterSend struct {
	*fakezk.Conn
	sent func(req task.Request)
}

func (c *afterSend) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	c.sent(req)
}

// LostReplies makes the lost create reply, which recipes must settle,
// frequent: used as Scenario.Wrap, it drops a client's connection just
// after it sends a create, with probability Rate (the create applied or
// not, drawn from Rand), and counts connection-loss responses. Set World
// and Rand in the scenario's Setup (r.World, r.Rand). It loses nothing
// while Setup runs (Setup runs with no fault) nor while World or Rand is
// nil; from the faults' start on, it drops until the seed ends.
type LostReplies struct {
	Rate float64
	// Deletes is the chance that a delete's reply is lost the same way,
	// the delete applied: the client is cut off for a while (up to 7/10
	// of the session timeout, so that other sessions act meanwhile) and
	// comes back, one time in two under a plan with the lag class,
	// through a member that has not applied the delete (as the faults'
	// cuts do). A delete sent again after such a loss, at the version a
	// read there gave, applies to whatever node is at the path by then.
	Deletes float64
	Counts  *Counts // where losses are counted; may be nil
	// Sent, if set, is told of every request client i sends.
	Sent  func(i int, req task.Request)
	World *World
	Rand  *rand.Rand
}

// Wrap wraps client i's connection (Scenario.Wrap).
func (l *LostReplies) Wrap(i int, conn *fakezk.Conn) task.Conn {
	return &lossConn{Conn: conn, l: l, i: i}
}

type lossConn struct {
	*fakezk.Conn
	l      *LostReplies
	i      int
	counts *Counts // where the Conn counts its losses (CountLosses)
}

func (c *lossConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if c.l.Sent != nil {
		c.l.Sent(c.i, req)
	}
	if c.l.Counts != c.counts {
		// The Conn counts the responses with connection loss it
		// delivers: no wrapper of done per request.
		c.counts = c.l.Counts
		var n *int
		if c.counts != nil {
			n = &c.counts.Losses
		}
		c.Conn.CountLosses(n)
	}
	c.Conn.Do(req, done, watch)
	if w := c.l.World; w == nil || c.l.Rand == nil || w.inj == nil || !w.inj.started {
		return
	}
	switch req.(type) {
	case *task.CreateRequest:
		if c.l.Rand.Float64() < c.l.Rate {
			c.l.World.Server.Drop(c.Conn, c.l.Rand.IntN(2) == 0)
		}
	case *task.DeleteRequest:
		if c.l.Deletes > 0 && c.l.Rand.Float64() < c.l.Deletes {
			// The delete applied, its reply lost in a cut long enough
			// for other sessions to act (up to 7/10 of the session
			// timeout), and the session back, one time in two, through
			// a member that has not applied it.
			w := c.l.World
			w.inj.reconnectLag(c.i)
			d := time.Millisecond + time.Duration(c.l.Rand.Int64N(int64(w.timeout*7/10)))
			w.Server.Partition(c.Conn, d, true)
		}
	}
}

// ReadOnlyBeforeDelete returns a Config.Wrap under which dir (a server
// path) is made read only for everyone (Server.AdminSetACL, an
// operator's setAcl) just before client i sends its first delete of a
// child of dir: a withdrawal or a give-back refused by an ACL at the
// worst moment, for a test of what a recipe does then. The other
// clients' connections are left as they are.
func ReadOnlyBeforeDelete(i int, dir string) func(int, *fakezk.Conn) task.Conn {
	return func(j int, conn *fakezk.Conn) task.Conn {
		if j != i {
			return conn
		}
		return &readOnlyConn{Conn: conn, dir: dir}
	}
}

type readOnlyConn struct {
	*fakezk.Conn
	dir    string
	closed bool
}

func (c *readOnlyConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if d, ok := req.(*task.DeleteRequest); ok && !c.closed && task.Parent(d.Path) == c.dir {
		c.closed = true
		readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
		if err := c.Server().AdminSetACL(c.dir, readOnly); err != nil {
			panic("sim: ReadOnlyBeforeDelete: " + err.Error())
		}
	}
	c.Conn.Do(req, done, watch)
}

// Reopen puts dir's ACL (a server path) back to task.OpenACL, as an
// operator would after ReadOnlyBeforeDelete's, and settles until dir
// holds n children or three session timeouts have passed. It returns
// how long that took and dir's children then: a test of a give-back
// that goes on until the ACL lets it checks that it went within twice
// the session timeout.
func (w *World) Reopen(dir string, n int) (time.Duration, []string, error) {
	if err := w.Server.AdminSetACL(dir, task.OpenACL); err != nil {
		return 0, nil, err
	}
	opened := w.Clock.Now()
	w.Settle(func() bool { return len(w.Children(dir)) == n || w.Clock.Now().Sub(opened) > 3*w.Timeout() })
	return w.Clock.Now().Sub(opened), w.Children(dir), nil
}

// Across runs t on ex and, while it fails with session expiry, runs it
// again on the next session (what executor.AwaitAcrossExpiry does for the
// blocking APIs); k receives the first other outcome, unless the world is
// closing. cnt, if not nil, counts the reruns.
func Across[T any](r *Trial, ex *executor.Executor, t task.Task[T], cnt *Counts, k func(T, error)) {
	executor.Submit(ex, t, func(v T, err error) {
		if r.Closing() {
			return
		}
		if errors.Is(err, task.ErrSessionExpired) {
			if cnt != nil {
				cnt.Expiries++
			}
			Across(r, ex, t, cnt, k)
			return
		}
		k(v, err)
	})
}

// After runs k on ex after d of the simulated clock (at once if the
// session ends first), unless the world is closing.
func After(r *Trial, ex *executor.Executor, d time.Duration, k func()) {
	executor.Submit(ex, c.Sleep(d), func(task.Unit, error) {
		if !r.Closing() {
			k()
		}
	})
}

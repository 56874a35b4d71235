package group_test

import (
	"errors"
	"math/rand/v2"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// counts is what the faults did to the clients, summed over seeds, to
// show they bit.
type counts struct {
	losses   int // responses with connection loss
	expiries int // flows that failed with session expiry and ran again
}

// lostReplies drops a client's connection just after it sends a create,
// with probability rate (the create applied or not, drawn from the seed):
// the lost reply that recipes must settle, made frequent. It also counts
// connection-loss responses. Set w and rng in the scenario's Setup.
type lostReplies struct {
	rate float64
	w    *sim.World
	rng  *rand.Rand
	cnt  *counts
	// sent, if set, is told of every request client i sends.
	sent func(i int, req task.Request)
}

func (l *lostReplies) wrap(i int, conn *fakezk.Conn) task.Conn {
	return &lossConn{Conn: conn, l: l, i: i}
}

type lossConn struct {
	*fakezk.Conn
	l *lostReplies
	i int
}

func (c *lossConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if c.l.sent != nil {
		c.l.sent(c.i, req)
	}
	c.Conn.Do(req, func(r task.Response) {
		if errors.Is(r.Err, task.ErrConnectionLoss) {
			c.l.cnt.losses++
		}
		done(r)
	}, watch)
	if _, ok := req.(*task.CreateRequest); ok && c.l.rng.Float64() < c.l.rate {
		c.l.w.Server.Drop(c.Conn, c.l.rng.IntN(2) == 0)
	}
}

// across runs t on ex and, while it fails with session expiry, runs it
// again on the next session (what the blocking API's AwaitAcrossExpiry
// does).
func across[T any](r *sim.Trial, ex *executor.Executor, t task.Task[T], cnt *counts, k func(T, error)) {
	executor.Submit(ex, t, func(v T, err error) {
		if r.Closing() {
			return
		}
		if errors.Is(err, task.ErrSessionExpired) {
			cnt.expiries++
			across(r, ex, t, cnt, k)
			return
		}
		k(v, err)
	})
}

// after runs k on ex after d of the simulated clock (at once if the
// session ends first), unless the world is closing.
func after(r *sim.Trial, ex *executor.Executor, d time.Duration, k func()) {
	executor.Submit(ex, c.Sleep(d), func(task.Unit, error) {
		if !r.Closing() {
			k()
		}
	})
}

func draw(rng *rand.Rand, max time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(max)))
}

package barrier_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// faults is the fault mix of the simulations: connection drops (requests
// in flight applied or not), partitions up to 6s (longer than the 4s
// session timeout: expiry), delivery delays and outright expiries.
var faults = fakezk.Config{FaultRate: 0.02, Faults: fakezk.FaultConfig{MaxPartition: 6 * time.Second, MaxDelay: time.Second}}

// counts is what the faults did to the clients, to show they bit.
type counts struct {
	losses   int // responses with connection loss
	expiries int // flows that failed with session expiry and ran again
}

// lossConn counts the connection-loss responses a client receives, and
// drops the connection just after a create is sent with probability
// dropCreate (the create applied or not, drawn from the seed): the lost
// reply that recipes must settle, made frequent.
type lossConn struct {
	*fakezk.Conn
	world      **sim.World
	rng        *rand.Rand
	dropCreate float64
	n          *int
}

func (c *lossConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, func(r task.Response) {
		if errors.Is(r.Err, task.ErrConnectionLoss) {
			*c.n++
		}
		done(r)
	}, watch)
	if _, ok := req.(*task.CreateRequest); ok && c.rng.Float64() < c.dropCreate {
		(*c.world).Server.Drop(c.Conn, c.rng.IntN(2) == 0)
	}
}

// newWorld builds a simulated world whose clients count connection losses
// into cnt and lose the replies of creates with probability dropCreate.
func newWorld(seed uint64, clients int, server fakezk.Config, dropCreate float64, cnt *counts) (*sim.World, error) {
	var w *sim.World
	rng := rand.New(rand.NewPCG(seed, 99))
	w, err := sim.New(sim.Config{Seed: seed, Clients: clients, Server: server,
		Wrap: func(i int, c *fakezk.Conn) task.Conn {
			return &lossConn{Conn: c, world: &w, rng: rng, dropCreate: dropCreate, n: &cnt.losses}
		}})
	return w, err
}

// across runs t on ex and, while it fails with session expiry, runs it
// again on the next session (the simulation's AwaitAcrossExpiry).
func across[T any](ex *executor.Executor, t task.Task[T], cnt *counts, k func(T, error)) {
	executor.Submit(ex, t, func(v T, err error) {
		if errors.Is(err, task.ErrSessionExpired) {
			cnt.expiries++
			across(ex, t, cnt, k)
			return
		}
		k(v, err)
	})
}

// after runs k on ex after d of the simulated clock.
func after(ex *executor.Executor, d time.Duration, k func()) {
	executor.Submit(ex, c.Sleep(d), func(task.Unit, error) { k() })
}

func draw(rng *rand.Rand, max time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(max)))
}

// participantNodes lists the participant nodes under dir on the server.
func participantNodes(w *sim.World, dir string) []string {
	var out []string
	for _, n := range w.Children(dir) {
		if strings.HasPrefix(n, "_p_") {
			out = append(out, n)
		}
	}
	return out
}

// checkErrs reports errors of detached flows (cleanups) other than the
// end of a session.
func checkErrs(w *sim.World) error {
	for _, err := range w.Errs {
		if !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrClosed) {
			return fmt.Errorf("detached flow failed: %w", err)
		}
	}
	return nil
}

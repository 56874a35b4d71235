package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// busy is the executor fairness scenario: every client runs a flow that
// keeps its task queue busy (bursts of reads, each followed by a chain of
// synchronous steps), and each client but the first is stopped once, at a
// random instant, in one of four ways: Close or the end of a context given
// to CloseWhenDone, called from a job of its own busy flow or from a job
// of client 0 (between two of its own jobs). Judged on the executor's
// stated bound (executor package doc, Stopping):
//   - no step of the busy flow runs in a job after the stop's (from client
//     0: in any job after it);
//   - no request reaches the client's connection after the stop;
//   - the shutdown comes before the client's next job (its session's
//     Closed is published with the step count the stop saw), even when
//     the stop finds the client paused, suspended or partitioned;
//   - the busy flow ends once, with task.ErrClosed;
//   - a Create submitted right after the stop ends with task.ErrClosed
//     (at once after Close) and never reaches the server.
type busy struct {
	clients int
	r       *sim.Trial
	procs   []*busyProc // per client: its current process

	// summed over the seeds, for the test's report
	stops map[string]int
}

// busyProc is one process of a client: its executor, its stop plan and
// what the judge saw.
type busyProc struct {
	i      int
	ex     *executor.Executor
	cancel context.CancelFunc
	mode   string    // how it is stopped ("" for client 0: never)
	at     time.Time // when

	stopped   bool
	stopStep  uint64 // ex.Steps() when the stop was made
	self      bool   // the stop was made in a job of this executor
	ended     int    // outcomes of the busy flow after the stop
	heard     bool   // the Closed of the shutdown was published
	lateOK    bool   // the Create after the stop was refused at once
	steps     int    // busy steps taken (for the report)
	abandoned bool   // crashed: its flows never deliver again
}

var busyModes = []string{"close-self", "ctx-self", "close-other", "ctx-other"}

const (
	busyDir   = "/busy"
	busyBurst = 8                      // reads per burst
	busySync  = 24                     // synchronous steps after each read
	busyGrid  = 100 * time.Millisecond // bursts and stops start on this grid
)

func busyScenario() sim.Scenario {
	sc, _ := newBusy(4)
	return sc
}

func newBusy(clients int) (sim.Scenario, *busy) {
	s := &busy{clients: clients, stops: map[string]int{}}
	return sim.Scenario{
		Name:     fmt.Sprintf("busy/%d", clients),
		Clients:  clients,
		Faults:   sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.Operator), MaxRate: 0.01},
		Duration: 4 * time.Second,
		Setup: func(r *sim.Trial) error {
			s.r, s.procs = r, make([]*busyProc, clients)
			_, err := sim.Run(r.World, 0, task.Create(busyDir, nil, task.Persistent))
			return err
		},
		Wrap: func(i int, conn *fakezk.Conn) task.Conn { return &busyConn{Conn: conn, s: s, i: i} },
		Workload: func(r *sim.Trial) {
			for i := range clients {
				s.start(r, i)
			}
		},
		Restart: func(r *sim.Trial, i int) {
			s.procs[i].abandoned = true
			s.start(r, i)
			if i == 0 { // the dead process's waits to stop others never end
				for _, p := range s.procs[1:] {
					if strings.HasSuffix(p.mode, "-other") && !p.stopped {
						s.stopFrom0(r, p)
					}
				}
			}
		},
		Live: func(r *sim.Trial) bool {
			for _, p := range s.procs[1:] {
				if !p.stopped || p.ended == 0 || !p.heard {
					return false
				}
			}
			return true
		},
		Invariants: []sim.Invariant{sim.InvariantFunc(s.check)},
	}, s
}

// start starts client i's process: its busy flow, and its stop plan
// (client 0 is never stopped: it stops others).
func (s *busy) start(r *sim.Trial, i int) {
	ex := r.Execs[i]
	p := &busyProc{i: i, ex: ex}
	s.procs[i] = p
	ex.Subscribe(func(ev task.Event) {
		if ev.State != task.StateClosed || r.Closing() || p.heard {
			return
		}
		p.heard = true
		switch {
		case !p.stopped:
			r.Errorf("client %d: shut down with no stop", i)
		case ex.Steps() != p.stopStep:
			r.Errorf("client %d: stopped (%s) at job %d, shut down at job %d: jobs ran in between", i, p.mode, p.stopStep, ex.Steps())
		}
	})
	s.run(r, p)
	if i == 0 {
		return
	}
	p.mode = busyModes[r.Rand.IntN(len(busyModes))]
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	ex.CloseWhenDone(ctx)
	// A stop on the grid, where bursts start, in the first 3s from now.
	p.at = onGrid(r.Clock.Now().Add(time.Duration(1+r.Rand.IntN(30)) * busyGrid))
	if strings.HasSuffix(p.mode, "-other") {
		s.stopFrom0(r, p)
	}
}

// onGrid rounds t up to the grid.
func onGrid(t time.Time) time.Time {
	since := t.Sub(fakezk.Epoch)
	return fakezk.Epoch.Add((since + busyGrid - 1) / busyGrid * busyGrid)
}

// run submits p's busy flow; when it fails before the stop (connection
// loss, expiry), it starts again.
func (s *busy) run(r *sim.Trial, p *busyProc) {
	executor.Submit(p.ex, s.flow(r, p), func(_ task.Unit, err error) {
		switch {
		case p.abandoned || r.Closing():
		case p.stopped:
			p.ended++
			if p.ended > 1 {
				r.Errorf("client %d: busy flow ended %d times", p.i, p.ended)
			}
			if !errors.Is(err, task.ErrClosed) {
				r.Errorf("client %d: busy flow ended with %v after the stop (%s), want task.ErrClosed", p.i, err, p.mode)
			}
		case errors.Is(err, task.ErrSessionExpired) || task.IsRetryable(err):
			s.run(r, p)
		default:
			r.Errorf("client %d: busy flow: %v", p.i, err)
		}
	})
}

// flow is the busy flow: bursts of reads, each read followed by busySync
// synchronous steps, a burst on each grid instant, forever.
func (s *busy) flow(r *sim.Trial, p *busyProc) task.Task[task.Unit] {
	tick := task.Func(func(*task.Scope) (task.Unit, error) {
		s.tick(r, p)
		return task.Unit{}, nil
	})
	var syncSteps func(n int) task.Task[task.Unit]
	syncSteps = func(n int) task.Task[task.Unit] {
		if n == 0 {
			return task.Value(task.Unit{})
		}
		return c.Then(tick, func(task.Unit) task.Task[task.Unit] { return syncSteps(n - 1) })
	}
	read := c.Map(task.Exists(busyDir), func(*task.Stat) task.Unit { return task.Unit{} })
	var burst func(n int) task.Task[task.Unit]
	burst = func(n int) task.Task[task.Unit] {
		if n == busyBurst {
			return func(sc *task.Scope, k task.Cont[task.Unit]) {
				next := onGrid(sc.Now().Add(time.Nanosecond))
				task.Run(sc, c.Then(c.SleepUntil(next), func(task.Unit) task.Task[task.Unit] { return burst(0) }), k)
			}
		}
		return c.Then(c.Seq(tick, c.Seq(read, syncSteps(busySync))), func(task.Unit) task.Task[task.Unit] { return burst(n + 1) })
	}
	return burst(0)
}

// tick is one step of p's busy flow: the judge of the bound, and the stop
// when p stops itself.
func (s *busy) tick(r *sim.Trial, p *busyProc) {
	p.steps++
	if p.stopped {
		if !p.self || p.ex.Steps() != p.stopStep {
			r.Errorf("client %d: busy flow took a step in job %d after the stop (%s) at job %d", p.i, p.ex.Steps(), p.mode, p.stopStep)
		}
		return
	}
	if strings.HasSuffix(p.mode, "-self") && !r.Clock.Now().Before(p.at) {
		s.stop(r, p, true)
	}
}

// stopFrom0 stops p at p.at from a job of client 0 (its current process).
func (s *busy) stopFrom0(r *sim.Trial, p *busyProc) {
	executor.Submit(r.Execs[0], c.SleepUntil(p.at), func(_ task.Unit, err error) {
		switch {
		case p.abandoned || r.Closing():
		case err == nil:
			s.stop(r, p, false)
		case errors.Is(err, task.ErrSessionExpired):
			s.stopFrom0(r, p)
		default:
			r.Errorf("client 0: waiting to stop client %d: %v", p.i, err)
		}
	})
}

// stop stops p (self: from a job of p's executor) and checks that a Create
// submitted right after is refused at once.
func (s *busy) stop(r *sim.Trial, p *busyProc, self bool) {
	p.stopped, p.self, p.stopStep = true, self, p.ex.Steps()
	s.stops[p.mode]++
	r.Logf("client %d: stop (%s) at job %d", p.i, p.mode, p.stopStep)
	if strings.HasPrefix(p.mode, "close") {
		p.ex.Close()
	} else {
		p.cancel()
	}
	// After Close, Submit refuses at once. After the ctx's end, the
	// executor learns of it before its next job: a flow submitted in
	// between is queued, then ended by the shutdown, unsent.
	calls := 0
	executor.Submit(p.ex, task.Create(fmt.Sprintf("%s/late-%d", busyDir, p.i), nil, task.Persistent), func(_ string, err error) {
		calls++
		p.lateOK = calls == 1 && errors.Is(err, task.ErrClosed)
		if !p.lateOK {
			r.Errorf("client %d: a Create submitted after the stop (%s): outcome %d: %v, want one, task.ErrClosed", p.i, p.mode, calls, err)
		}
	})
	if strings.HasPrefix(p.mode, "close") && calls == 0 {
		r.Errorf("client %d: a Create submitted after Close was not refused at once", p.i)
	}
}

// check is the end-of-seed judge: every stop was honoured, and nothing
// submitted after a stop reached the server.
func (s *busy) check(r *sim.Trial) error {
	var errs []error
	for _, p := range s.procs[1:] {
		if !p.stopped || p.ended != 1 || !p.heard || !p.lateOK {
			errs = append(errs, fmt.Errorf("client %d (%s): stopped %v, busy flow ended %d times, shutdown heard %v, late create refused %v",
				p.i, p.mode, p.stopped, p.ended, p.heard, p.lateOK))
		}
	}
	for _, name := range r.Children(busyDir) {
		if strings.HasPrefix(name, "late-") {
			errs = append(errs, fmt.Errorf("%s/%s: a Create submitted after a stop reached the server", busyDir, name))
		}
	}
	return errors.Join(errs...)
}

// busyConn is a client's connection, which fails the seed for a request
// that reaches it after its process was stopped.
type busyConn struct {
	*fakezk.Conn
	s *busy
	i int
}

func (b *busyConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if p := b.s.procs[b.i]; p != nil && p.stopped && !p.abandoned {
		b.s.r.Errorf("client %d: request %s %s reached the connection after the stop (%s)", b.i, req.OpName(), req.NodePath(), p.mode)
	}
	b.Conn.Do(req, done, watch)
}

// The fairness scenario finds what it judges: stops of every kind, under
// faults.
func TestBusyScenario(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 8
	}
	sc, s := newBusy(4)
	st := sim.Check(t, sc, n)
	if st.Failures() > 0 {
		return
	}
	t.Logf("stops: %v", s.stops)
	for _, m := range busyModes {
		if s.stops[m] == 0 {
			t.Errorf("no stop of kind %s in %d seeds: the scenario does not check it", m, n)
		}
	}
}

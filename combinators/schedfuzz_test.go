package combinators_test

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// schedGen builds random trees of combinators (Then, Map, Seq, OnError,
// Catch, Retry with and without backoff, Fork, All, Timeout, Deadline,
// Loop) over leaves that succeed or fail at once, read a node, sleep,
// fail at a deadline already past, or run 70+ synchronous steps or Loop
// iterations (the trampoline and Loop's yield). Each root flow's requests
// name it (/f<i>/...), a fork's are under /fork, and each run of a Fork
// counts its handle's calls.
type schedGen struct {
	rng    *rand.Rand
	r      *endRig
	cur    int  // the root flow being built
	forked bool // building a fork's subtree
	ended  []bool
	// forksAfterEnd counts, per root flow, the Forks started after its
	// continuation was called.
	forksAfterEnd []int
	forks         []*int // per Fork run: its handle's calls
}

var errSched = errors.New("sched")

var schedErrs = []error{errSched, task.ErrNoNode, task.ErrDeadlineExceeded, task.ErrConnectionLoss, task.ErrNotSent, task.ErrCanceled}

func (g *schedGen) errs() []error {
	out := []error{schedErrs[g.rng.Intn(len(schedErrs))]}
	if g.rng.Intn(2) == 0 {
		out = append(out, schedErrs[g.rng.Intn(len(schedErrs))])
	}
	return out
}

func (g *schedGen) path(p string) string {
	p = fmt.Sprintf("/f%d/%s", g.cur, p)
	if g.forked {
		p = "/fork" + p
	}
	return p
}

func (g *schedGen) leaf() task.Task[int] {
	switch g.rng.Intn(8) {
	case 0:
		return task.Value(g.rng.Intn(10))
	case 1:
		return task.Fail[int](errSched)
	case 2:
		return c.Map(task.Get(g.path(fmt.Sprintf("n%d", g.rng.Intn(5)))), func(task.Data) int { return 1 })
	case 3:
		return c.Map(c.Sleep(time.Duration(g.rng.Intn(3))*time.Second), func(task.Unit) int { return 2 })
	case 4:
		return c.Deadline(task.Value(3), g.r.clk.Now().Add(-time.Second))
	case 5:
		t := task.Value(0)
		for range 70 + g.rng.Intn(70) {
			t = c.Then(t, func(v int) task.Task[int] { return task.Value(v + 1) })
		}
		return t
	case 6:
		lim := 60 + g.rng.Intn(150)
		return c.Loop(0, func(i int) bool { return i < lim }, func(i int) task.Task[int] { return task.Value(i + 1) })
	default:
		return c.Map(task.Exists(g.path("e")), func(*task.Stat) int { return 4 })
	}
}

func (g *schedGen) gen(depth int) task.Task[int] {
	if depth <= 0 {
		return g.leaf()
	}
	switch g.rng.Intn(12) {
	case 0:
		a, b := g.gen(depth-1), g.gen(depth-1)
		return c.Then(a, func(int) task.Task[int] { return b })
	case 1:
		return c.Map(g.gen(depth-1), func(v int) int { return v + 1 })
	case 2:
		return c.Seq(g.gen(depth-1), g.gen(depth-1))
	case 3:
		a, b := g.gen(depth-1), g.gen(depth-1)
		return c.OnError(a, func(error) task.Task[int] { return b }, g.errs()...)
	case 4:
		a, b := g.gen(depth-1), g.gen(depth-1)
		return c.Catch(a, func(error) task.Task[int] { return b })
	case 5:
		p := c.Policy{Attempts: 2 + g.rng.Intn(3), On: g.errs()}
		if g.rng.Intn(3) == 0 { // no limit, on errors the final drain ends
			p.Attempts, p.On = 0, []error{task.ErrConnectionLoss, task.ErrNoNode}
		}
		if g.rng.Intn(2) == 0 {
			p.Backoff = c.Backoff{Initial: time.Duration(1+g.rng.Intn(1500)) * time.Millisecond, Multiplier: 2, Jitter: 0.5}
		}
		return c.Retry(g.gen(depth-1), p)
	case 6:
		cur, forked := g.cur, g.forked
		g.forked = true
		inner := g.gen(depth - 1)
		g.forked = forked
		fork := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
			if !forked && g.ended[cur] {
				g.forksAfterEnd[cur]++
			}
			n := new(int)
			g.forks = append(g.forks, n)
			c.Fork(inner, func(int, error) { *n++ })(s, k)
		})
		return c.Seq(fork, task.Value(5))
	case 7:
		return c.Map(c.All(g.gen(depth-1), g.gen(depth-1), g.gen(depth-1)), func(vs []int) int { return len(vs) })
	case 8:
		return c.Timeout(g.gen(depth-1), time.Duration(g.rng.Intn(3000))*time.Millisecond)
	case 9:
		body, lim := g.gen(depth-1), g.rng.Intn(4)
		return c.Loop(0, func(i int) bool { return i < lim }, func(i int) task.Task[int] {
			return c.Map(body, func(int) int { return i + 1 })
		})
	case 10:
		return c.Deadline(g.gen(depth-1), g.r.clk.Now().Add(time.Duration(g.rng.Intn(4000))*time.Millisecond))
	default:
		return g.leaf()
	}
}

// requestsOf counts the requests flow i has sent (its forks' aside).
func requestsOf(r *endRig, i int) int {
	pre, n := fmt.Sprintf("/f%d/", i), 0
	for _, call := range r.conn.Calls() {
		if strings.HasPrefix(call.Req.NodePath(), pre) {
			n++
		}
	}
	return n
}

// TestRandomSchedules runs four random combinator trees per seed (half of
// them under a Deadline) through a random schedule of replies (success,
// NoNode, connection loss), clock moves, suspensions and reconnects,
// Flow.Cancel, session expiry (even seeds) and Shutdown (every fifth),
// then answers everything and runs the clock out. It checks what the
// package docs promise whatever the schedule: each flow's continuation
// is called exactly once and each Fork's handle exactly once (also after
// Shutdown); a flow past its Deadline has ended as soon as the executor
// is idle, also while suspended; once a flow has ended it sends no
// request and starts no Fork (late results dropped, inner tasks at step
// boundaries); no timer is left on the clock and no request unanswered.
// Invariant builds (-tags zkflow_invariants, -race) also panic on a
// continuation called twice anywhere in the trees. It held on the code
// as it was.
func TestRandomSchedules(t *testing.T) {
	seeds := int64(3000)
	if testing.Short() {
		seeds = 300
	}
	for seed := int64(1); seed <= seeds; seed++ {
		r := newEndRig(t)
		const nflows = 4
		g := &schedGen{rng: rand.New(rand.NewSource(seed)), r: r, ended: make([]bool, nflows), forksAfterEnd: make([]int, nflows)}
		calls := make([]int, nflows)
		errs := make([]error, nflows)
		sentAtEnd := make([]int, nflows)
		deadlines := make([]time.Time, nflows)
		flows := make([]*executor.Flow, nflows)
		suspended, closed, sess := false, false, int64(1)
		for i := range nflows {
			g.cur = i
			tk := g.gen(4)
			if g.rng.Intn(2) == 0 {
				deadlines[i] = r.clk.Now().Add(time.Duration(1+g.rng.Intn(5000)) * time.Millisecond)
				tk = c.Deadline(tk, deadlines[i])
			}
			flows[i] = executor.Submit(r.ex, tk, func(_ int, err error) {
				calls[i]++
				errs[i] = err
				g.ended[i] = true
				sentAtEnd[i] = requestsOf(r, i)
			})
		}
		checkDeadlines := func() {
			r.ex.RunUntilIdle()
			for i := range nflows {
				if !deadlines[i].IsZero() && !r.clk.Now().Before(deadlines[i]) && calls[i] == 0 && !closed {
					t.Errorf("seed %d: flow %d still running %v past its deadline (suspended %v)", seed, i, r.clk.Now().Sub(deadlines[i]), suspended)
					deadlines[i] = time.Time{}
				}
			}
		}
		act := g.rng
		for range 60 {
			r.ex.RunUntilIdle()
			switch act.Intn(8) {
			case 0, 1, 2:
				if p := r.conn.Pending(); len(p) > 0 {
					call := p[act.Intn(len(p))]
					switch act.Intn(4) {
					case 0:
						call.Fail(task.ErrNoNode)
					case 1:
						call.Fail(task.ErrConnectionLoss)
					default:
						call.Reply(task.Response{})
					}
				}
			case 3:
				r.clk.Advance(time.Duration(act.Intn(1500)) * time.Millisecond)
				checkDeadlines()
			case 4:
				if suspended {
					r.conn.Connect(sess)
				} else {
					r.conn.Suspend()
				}
				suspended = !suspended
			case 5:
				switch act.Intn(8) {
				case 0, 1:
					flows[act.Intn(nflows)].Cancel()
				case 2:
					if seed%2 == 0 {
						r.conn.Expire()
						r.ex.RunUntilIdle()
						sess++
						r.conn.Connect(sess)
						suspended = false
					}
				case 3:
					if seed%5 == 0 && !closed {
						r.ex.Shutdown()
						closed = true
					}
				}
			default:
				r.clk.AdvanceToNext()
				checkDeadlines()
			}
		}
		if suspended {
			r.conn.Connect(sess)
		}
		for range 2000 {
			r.ex.RunUntilIdle()
			if p := r.conn.Pending(); len(p) > 0 {
				for _, call := range p {
					call.Reply(task.Response{})
				}
				continue
			}
			if !r.clk.AdvanceToNext() {
				break
			}
		}
		r.ex.RunUntilIdle()
		for i := range nflows {
			if calls[i] != 1 {
				t.Errorf("seed %d: flow %d: continuation called %d times (err %v)", seed, i, calls[i], errs[i])
			}
			if n := requestsOf(r, i) - sentAtEnd[i]; n != 0 || g.forksAfterEnd[i] != 0 {
				t.Errorf("seed %d: flow %d (ended with %v) sent %d requests and started %d forks after its end", seed, i, errs[i], n, g.forksAfterEnd[i])
			}
		}
		for i, n := range g.forks {
			if *n != 1 {
				t.Errorf("seed %d: the handle of fork run %d called %d times", seed, i, *n)
			}
		}
		if p := r.clk.Pending(); p != r.base && !closed {
			t.Errorf("seed %d: %d timers left on the clock, want %d", seed, p, r.base)
		}
		if p := r.conn.Pending(); len(p) != 0 {
			t.Errorf("seed %d: %d requests unanswered", seed, len(p))
		}
		r.ex.Shutdown()
		if t.Failed() {
			return
		}
	}
}

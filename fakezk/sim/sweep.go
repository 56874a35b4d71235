package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// IsWrite reports whether req is a write: a create, delete, setData,
// setACL or multi (what takes a zxid on the server).
func IsWrite(req task.Request) bool {
	switch req.(type) {
	case *task.CreateRequest, *task.DeleteRequest, *task.SetDataRequest, *task.SetACLRequest, *task.MultiRequest:
		return true
	}
	return false
}

// NthWrite matches the n-th write (IsWrite; n from 1) a Cutter is shown
// while armed: as a Cutter's Match, it cuts the client off just after
// that write.
func NthWrite(n int) func(task.Request) bool {
	seen := 0
	return func(req task.Request) bool {
		if !IsWrite(req) {
			return false
		}
		seen++
		return seen == n
	}
}

// Ephemerals returns the paths (the client's, under Config.Root) of the
// ephemeral nodes of session id under dir, dir included, sorted.
func (w *World) Ephemerals(dir string, id int64) []string {
	_, nodes := w.Server.Snapshot()
	root := w.ServerPath(dir)
	var out []string
	for _, n := range nodes {
		if n.Stat.EphemeralOwner != id || (n.Path != root && !strings.HasPrefix(n.Path, strings.TrimSuffix(root, "/")+"/")) {
			continue
		}
		p := n.Path
		if w.root != "" {
			p = strings.TrimPrefix(p, w.root)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// CutSweep enumerates the cut point of a directed history: for n = 1,
// 2, ..., it runs History on a new world whose client 0 is cut off just
// after its n-th write sent once the Cutter is armed (NthWrite), that
// write and those in flight applied, and comes back through a member that
// has not applied them, held there without drift for Lag (a minute if 0)
// unless a sync or a write of its session catches it up; it answers
// watched reads from its view too (Server.LagWatchedReads). The cut lasts
// For (a third of the session timeout if 0): a call whose deadline is
// shorter than that ends while the client is cut off, and its cleanup
// runs on the lagging member. It stops at the first n whose history never
// cut (History sent fewer writes) and returns how many cut points it ran.
type CutSweep struct {
	Seed    uint64 // 0: 1
	Clients int    // 0: 2
	Lag     time.Duration
	For     time.Duration
	// Max bounds n (0: 64): a history that keeps writing is cut at most
	// that many ways.
	Max int
	// History runs one history on w: it arms cut (cut.Armed = true) when
	// the writes to count begin, runs client 0's call, and returns an
	// error if what it checks does not hold. It may leave the call
	// undone at the end; it must not fail because the cut did not happen
	// (the sweep tells that from cut.Cut).
	History func(w *World, cut *Cutter) error
}

// Run runs the sweep, failing t at the first cut point whose history
// fails, and returns the number of cut points run.
func (cs CutSweep) Run(t testing.TB) int {
	t.Helper()
	n, err := cs.sweep()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the history sent no write once armed: the sweep cut nothing")
	}
	return n
}

// Err runs the sweep and returns the first failure, for a test that
// checks the sweep bites (a canary on): nil if every cut point passed.
func (cs CutSweep) Err() error {
	_, err := cs.sweep()
	return err
}

func (cs CutSweep) sweep() (int, error) {
	max := cs.Max
	if max == 0 {
		max = 64
	}
	for n := 1; n <= max; n++ {
		cut, err := cs.one(n)
		if err != nil {
			return n - 1, fmt.Errorf("cut after write %d: %w", n, err)
		}
		if !cut {
			return n - 1, nil
		}
	}
	return max, nil
}

func (cs CutSweep) one(n int) (bool, error) {
	seed, clients, lag := cs.Seed, cs.Clients, cs.Lag
	if seed == 0 {
		seed = 1
	}
	if clients == 0 {
		clients = 2
	}
	if lag == 0 {
		lag = time.Minute
	}
	cut := &Cutter{Match: NthWrite(n), Applied: true, Lag: lag, For: cs.For}
	w, err := New(Config{Seed: seed, Clients: clients, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			return cut.Wrap(conn)
		}
		return conn
	}})
	if err != nil {
		return false, err
	}
	defer w.Close()
	cut.World = w
	// A lagging member answers watched reads from its view too, as a
	// ZooKeeper follower does.
	w.Server.LagWatchedReads(true)
	err = cs.History(w, cut)
	if !cut.Cut {
		return false, nil
	}
	return true, err
}

// TakeGive is the history CutSweep runs for a recipe that takes something
// (a lock, a lease, leadership, membership) and gives it back: Take and
// Give, first by client 1 (so that the recipe's persistent nodes exist),
// then, the Cutter armed, by client 0, each with a deadline of Deadline
// (half the cut by default, so that a call cut off ends while the client
// is: the acquire's deadline passes, or the give's, whose delete goes on
// by itself). Then it checks what the recipe promises whichever write was
// cut: client 0's session, alive, leaves no ephemeral node under Dir
// (within Bound, two minutes by default: a cleanup that goes on in the
// background is given time), Held, if set, accepts what Take reported
// when it succeeded, and client 1 then takes and gives back within
// Bound. Take is given the client that takes (0 or 1).
type TakeGive[H any] struct {
	Dir      string
	Take     func(client int) task.Task[H]
	Give     func(H) task.Task[task.Unit]
	Held     func(w *World, h H) error
	Deadline time.Duration
	Bound    time.Duration
	// Contended: client 1 holds what it took while client 0's take runs
	// (which waits, and ends at its deadline), and gives it back once
	// client 0's call has ended.
	Contended bool
}

// History is t as a CutSweep's History.
func (t TakeGive[H]) History(w *World, cut *Cutter) error {
	return takeGive[H]{dir: t.Dir, held: t.Held, deadline: t.Deadline, bound: t.Bound, contended: t.Contended,
		take: func(w *World, i int, d time.Duration) *Outcome[H] { return Submit(w, i, c.Timeout(t.Take(i), d)) },
		give: func(w *World, i int, h H, d time.Duration) *Outcome[task.Unit] {
			return Submit(w, i, c.Timeout(t.Give(h), d))
		},
	}.history(w, cut)
}

// BlockingTakeGive is TakeGive for a recipe's blocking face: Take and
// Give run in an actor of the client (World.Go) with a context that ends
// at the deadline on the simulated clock (Actor.WithTimeout), so the
// context ends from outside the call while the client is cut off, as a
// caller's would. Take and Give are given the actor (its Exec is the
// client's executor) and that context; they must return once it ends.
type BlockingTakeGive[H any] struct {
	Dir       string
	Take      func(a *Actor, ctx context.Context) (H, error)
	Give      func(a *Actor, ctx context.Context, h H) error
	Held      func(w *World, h H) error
	Deadline  time.Duration
	Bound     time.Duration
	Contended bool
}

// History is t as a CutSweep's History.
func (t BlockingTakeGive[H]) History(w *World, cut *Cutter) error {
	return takeGive[H]{dir: t.Dir, held: t.Held, deadline: t.Deadline, bound: t.Bound, contended: t.Contended,
		take: func(w *World, i int, d time.Duration) *Outcome[H] {
			return CallIn(w, i, d, func(a *Actor, ctx context.Context) (H, error) { return t.Take(a, ctx) })
		},
		give: func(w *World, i int, h H, d time.Duration) *Outcome[task.Unit] {
			return CallIn(w, i, d, func(a *Actor, ctx context.Context) (task.Unit, error) { return task.Unit{}, t.Give(a, ctx, h) })
		},
	}.history(w, cut)
}

// CallIn runs call in an actor of client i (World.Go) with a context
// that ends d of simulated time from now, and returns where its outcome
// lands: a blocking call whose context ends from outside, for a history
// to Settle on.
func CallIn[T any](w *World, i int, d time.Duration, call func(a *Actor, ctx context.Context) (T, error)) *Outcome[T] {
	o := &Outcome[T]{}
	w.Go(i, func(a *Actor) {
		ctx, cancel := a.WithTimeout(a.Context(), d)
		defer cancel()
		o.V, o.Err = call(a, ctx)
		o.Done = true
	})
	return o
}

// takeGive is the history of TakeGive and BlockingTakeGive: take and give
// start a call on client i that ends by d and return its outcome.
type takeGive[H any] struct {
	dir             string
	held            func(w *World, h H) error
	deadline, bound time.Duration
	contended       bool
	take            func(w *World, i int, d time.Duration) *Outcome[H]
	give            func(w *World, i int, h H, d time.Duration) *Outcome[task.Unit]
}

// settled runs o to its end; ErrStuck if it never ends.
func settled[T any](w *World, o *Outcome[T]) (T, error) {
	if !w.Settle(func() bool { return o.Done }) {
		var zero T
		return zero, ErrStuck
	}
	return o.V, o.Err
}

func (t takeGive[H]) history(w *World, cut *Cutter) error {
	bound := t.bound
	if bound == 0 {
		bound = 2 * time.Minute
	}
	deadline := t.deadline
	if deadline == 0 {
		d := cut.For
		if d == 0 {
			d = w.Timeout() / 3
		}
		deadline = d / 2
	}
	h1, err := settled(w, t.take(w, 1, bound))
	if err != nil {
		return fmt.Errorf("client 1's first take: %w", err)
	}
	if !t.contended {
		if _, err := settled(w, t.give(w, 1, h1, bound)); err != nil {
			return fmt.Errorf("client 1's first give: %w", err)
		}
	}
	sess := w.Conns[0].SessionID()
	cut.Armed = true
	took0 := t.take(w, 0, deadline)
	var gave *Outcome[task.Unit]
	if !w.Settle(func() bool { return took0.Done }) {
		return fmt.Errorf("client 0's take never ended")
	}
	if took0.Err == nil {
		if t.held != nil {
			if err := t.held(w, took0.V); err != nil {
				return fmt.Errorf("client 0's take succeeded, but: %w", err)
			}
		}
		gave = t.give(w, 0, took0.V, deadline)
		if !w.Settle(func() bool { return gave.Done }) {
			return fmt.Errorf("client 0's give never ended")
		}
	}
	if !cut.Cut {
		return nil
	}
	if t.contended {
		if _, err := settled(w, t.give(w, 1, h1, bound)); err != nil {
			return fmt.Errorf("client 1's first give: %w", err)
		}
	}
	if w.Conns[0].SessionID() != sess {
		return fmt.Errorf("client 0's session ended: the history missed its schedule")
	}
	end := w.Clock.Now().Add(bound)
	left := func() []string { return w.Ephemerals(t.dir, sess) }
	w.Settle(func() bool { return len(left()) == 0 || !w.Clock.Now().Before(end) })
	if l := left(); len(l) > 0 {
		what := fmt.Sprintf("take: %v", took0.Err)
		if gave != nil {
			what = fmt.Sprintf("took, give: %v", gave.Err)
		}
		return fmt.Errorf("client 0 (%s) left %v of its live session for %s", what, l, bound)
	}
	h, err := settled(w, t.take(w, 1, bound))
	if err != nil {
		return fmt.Errorf("client 1 never took after client 0's session left nothing: %w", err)
	}
	if _, err := settled(w, t.give(w, 1, h, bound)); err != nil {
		return fmt.Errorf("client 1's give: %w", err)
	}
	return nil
}

// RunSweeps runs each sweep as a subtest named by its key, in the keys'
// order, and logs how many cut points each ran.
func RunSweeps(t *testing.T, sweeps map[string]CutSweep) {
	t.Helper()
	names := make([]string, 0, len(sweeps))
	for name := range sweeps {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sweep := sweeps[name]
		t.Run(name, func(t *testing.T) { t.Logf("%d cut points", sweep.Run(t)) })
	}
}

package barrier_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

func TestBadInput(t *testing.T) {
	for _, p := range []string{"", "rel", "/", "/a/", "/a//b", "/zookeeper", "/zookeeper/x"} {
		if _, err := barrier.New(p); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q) = %v, want ErrInvalidPath", p, err)
		}
		if _, err := barrier.NewDouble(p, 2); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("NewDouble(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	for _, n := range []int{0, -1, -1 << 40} {
		if _, err := barrier.NewDouble("/d", n); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("NewDouble(n=%d) = %v, want ErrInvalidArgument", n, err)
		}
	}
	if _, err := barrier.NewClient(nil, "/b"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient(nil) = %v", err)
	}
	if _, err := barrier.NewDoubleClient(nil, "/d", 2); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewDoubleClient(nil) = %v", err)
	}
	w := newTestWorld(t, 1, 1)
	if _, err := barrier.NewClient(w.Execs[0], "bad"); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("NewClient(bad path) = %v", err)
	}
	d, err := barrier.NewDoubleClient(w.Execs[0], "/d", 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Leave(context.Background(), nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Leave(nil) = %v", err)
	}
	// Nil values give typed errors, not panics.
	var nb *barrier.Barrier
	var nd *barrier.DoubleBarrier
	var np *barrier.Participant
	var ng *barrier.Client
	var ndg *barrier.DoubleClient
	for name, tk := range map[string]task.Task[task.Unit]{"Set": nb.Set(nil), "Remove": nb.Remove(), "Wait": nb.Wait(), "Leave": np.Leave()} {
		if _, err := sim.Run(w, 0, tk); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("nil %s = %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := sim.Run(w, 0, nd.Enter()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Enter = %v", err)
	}
	ctx := context.Background()
	if err := ng.Wait(ctx); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Client.Wait = %v", err)
	}
	if _, err := ndg.Enter(ctx); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Double.Enter = %v", err)
	}
	if err := d.Leave(ctx, &barrier.Participant{}); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Leave of a zero participant = %v", err)
	}
	b, _ := barrier.New("/big")
	if _, err := sim.Run(w, 0, b.Set(make([]byte, task.MaxDataSize+1))); !errors.Is(err, task.ErrDataTooLarge) {
		t.Errorf("Set of too much data = %v, want ErrDataTooLarge", err)
	}
}

func newTestWorld(t *testing.T, seed uint64, clients int) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: seed, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// The barrier holds waiters through data changes and lets them go when it
// is removed; a missing barrier does not hold anyone.
func TestBarrierHoldsUntilRemoved(t *testing.T) {
	w := newTestWorld(t, 3, 3)
	b, _ := barrier.New("/app/barrier")
	if _, err := sim.Run(w, 0, b.Wait()); err != nil {
		t.Fatalf("wait on a missing barrier: %v", err)
	}
	if _, err := sim.Run(w, 0, b.Set([]byte("hold"))); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, b.Set([]byte("again"))); err != nil {
		t.Fatalf("second Set: %v", err)
	}
	w1, w2 := sim.Submit(w, 1, b.Wait()), sim.Submit(w, 2, b.Wait())
	w.Drive()
	for i := range 3 {
		if _, err := sim.Run(w, 0, task.Set(b.Path(), []byte{byte(i)}, task.AnyVersion)); err != nil {
			t.Fatal(err)
		}
		w.Drive()
		if w1.Done || w2.Done {
			t.Fatalf("a waiter passed after data change %d while the barrier is up", i)
		}
	}
	if _, err := sim.Run(w, 0, b.Remove()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !w1.Done || !w2.Done || w1.Err != nil || w2.Err != nil {
		t.Fatalf("waiters after remove: %+v %+v", w1, w2)
	}
	if _, err := sim.Run(w, 0, b.Remove()); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
}

// Three participants of a barrier for three: nobody passes Enter before
// the third arrives, nobody finishes Leave before the last leaves, and no
// participant node is left.
func TestDoubleBarrierScenario(t *testing.T) {
	w := newTestWorld(t, 5, 3)
	d, _ := barrier.NewDouble("/app/round1", 3)
	e0, e1 := sim.Submit(w, 0, d.Enter()), sim.Submit(w, 1, d.Enter())
	w.Settle(func() bool { return false })
	if e0.Done || e1.Done {
		t.Fatalf("entered with 2 of 3: %+v %+v", e0, e1)
	}
	if n := len(participantNodes(w, d.Dir())); n != 2 {
		t.Fatalf("%d participant nodes, want 2", n)
	}
	e2 := sim.Submit(w, 2, d.Enter())
	w.Drive()
	if !e0.Done || !e1.Done || !e2.Done || e0.Err != nil || e1.Err != nil || e2.Err != nil {
		t.Fatalf("enter with 3 of 3: %+v %+v %+v", e0, e1, e2)
	}
	l0, l1 := sim.Submit(w, 0, e0.V.Leave()), sim.Submit(w, 1, e1.V.Leave())
	w.Settle(func() bool { return false })
	if l0.Done || l1.Done {
		t.Fatalf("left while participant 2 is in: %+v %+v", l0, l1)
	}
	l2 := sim.Submit(w, 2, e2.V.Leave())
	w.Drive()
	for i, l := range []*sim.Outcome[task.Unit]{l0, l1, l2} {
		if !l.Done || l.Err != nil {
			t.Fatalf("leave %d: %+v", i, l)
		}
	}
	if got := w.Children(d.Dir()); len(got) != 1 || got[0] != barrier.ReadyNode {
		t.Fatalf("children after the round: %v, want only %s", got, barrier.ReadyNode)
	}
	// A late participant of the same directory passes at once.
	late := sim.Submit(w, 0, d.Enter())
	w.Drive()
	if !late.Done || late.Err != nil {
		t.Fatalf("late enter: %+v", late)
	}
	if _, err := sim.Run(w, 0, late.V.Leave()); err != nil {
		t.Fatal(err)
	}
}

// createDropper cuts the connection just after each of the first n
// participant creates is sent, the create applied: the reply is lost. The
// cut is a drop (reconnect at once) or, with cut set, a partition that
// long (shorter than the session timeout: the session survives).
type createDropper struct {
	*fakezk.Conn
	w   **sim.World
	n   int
	cut time.Duration
}

func (c *createDropper) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if cr, ok := req.(*task.CreateRequest); ok && c.n > 0 && strings.Contains(cr.Path, "/_p_") {
		c.n--
		if c.cut > 0 {
			(*c.w).Server.Partition(c.Conn, c.cut, true)
		} else {
			(*c.w).Server.Drop(c.Conn, true)
		}
	}
}

// An Enter that ends by deadline or cancel, with the reply of its create
// lost (applied) and not, leaves no participant node; so does a canceled
// Leave. In the partition case the deadline passes while the session is
// suspended and the create's outcome unknown: the cleanup finds the node
// by its prefix and owner after the reconnect.
func TestNoOrphanAfterDeadlineOrCancel(t *testing.T) {
	cases := []struct {
		lose int
		cut  time.Duration
	}{{0, 0}, {1, 0}, {2, 0}, {1, 3 * time.Second}}
	for _, tc := range cases {
		lose := tc.lose
		var w *sim.World
		w, err := sim.New(sim.Config{Seed: 11, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
			if i == 0 {
				return &createDropper{Conn: c, w: &w, n: lose, cut: tc.cut}
			}
			return c
		}})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := barrier.NewDouble("/app/never", 3)
		for _, p := range []string{"/app", d.Dir()} { // so that the lost create makes a node
			if _, err := sim.Run(w, 1, task.Create(p, nil, task.Persistent)); err != nil {
				t.Fatal(err)
			}
		}
		o := &sim.Outcome[*barrier.Participant]{}
		executor.SubmitWith(w.Execs[0], d.Enter(), executor.Options{Deadline: w.Clock.Now().Add(time.Second)},
			func(p *barrier.Participant, err error) { o.V, o.Err, o.Done = p, err, true })
		f := executor.Submit(w.Execs[1], d.Enter(), func(*barrier.Participant, error) {})
		w.Settle(func() bool { return o.Done })
		if !errors.Is(o.Err, task.ErrDeadlineExceeded) {
			t.Fatalf("lose %d: enter = %v, want deadline exceeded", lose, o.Err)
		}
		f.Cancel()
		if !w.Settle(func() bool { return len(participantNodes(w, d.Dir())) == 0 }) {
			t.Fatalf("lose %d: orphan participant nodes: %v", lose, participantNodes(w, d.Dir()))
		}
		for _, err := range w.Errs {
			t.Errorf("lose %d: cleanup failed: %v", lose, err)
		}
		w.Close()
	}

	// A Leave canceled while it waits for the others still deletes the
	// participant's node.
	w := newTestWorld(t, 12, 2)
	d, _ := barrier.NewDouble("/app/two", 2)
	e0, e1 := sim.Submit(w, 0, d.Enter()), sim.Submit(w, 1, d.Enter())
	w.Settle(func() bool { return e0.Done && e1.Done })
	if e0.Err != nil || e1.Err != nil {
		t.Fatal(e0.Err, e1.Err)
	}
	// Whichever is lowest (by sequence number, the name's last ten
	// digits) waits without deleting its node first.
	lowest, other := e0.V, e1.V
	if seqSuffix(lowest.Path()) > seqSuffix(other.Path()) {
		lowest, other = other, lowest
	}
	idx := 0
	if lowest != e0.V {
		idx = 1
	}
	f := executor.Submit(w.Execs[idx], lowest.Leave(), func(task.Unit, error) {})
	w.Drive()
	if _, ok := w.Server.NodeStat(lowest.Path()); !ok {
		t.Fatal("the lowest participant deleted its node before the others left")
	}
	f.Cancel()
	w.Drive()
	if _, ok := w.Server.NodeStat(lowest.Path()); ok {
		t.Fatal("a canceled Leave left the participant's node")
	}
	if _, err := sim.Run(w, 1-idx, other.Leave()); err != nil {
		t.Fatal(err)
	}
}

// The blocking API, on real goroutines: Client.Wait returns once the
// barrier is removed; DoubleClient.Enter with a context that ends leaves no
// node; three goroutines pass a double barrier together.
func TestBlocking(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var done []chan struct{}
	start := func(seed uint64) *executor.Executor {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan struct{})
		go func() { defer close(ch); _ = ex.Run(ctx) }()
		done = append(done, ch)
		return ex
	}
	defer func() {
		stop()
		for _, ch := range done {
			<-ch
		}
	}()
	exs := []*executor.Executor{start(1), start(2), start(3)}

	g0, _ := barrier.NewClient(exs[0], "/blocking/gate")
	g1, _ := barrier.NewClient(exs[1], "/blocking/gate")
	if err := g0.Set(ctx, nil); err != nil {
		t.Fatal(err)
	}
	passed := make(chan error, 1)
	go func() { passed <- g1.Wait(ctx) }()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if err := g1.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with a short context = %v", err)
	}
	cancel()
	if err := g0.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-passed; err != nil {
		t.Fatal(err)
	}

	d0, _ := barrier.NewDoubleClient(exs[0], "/blocking/double", 3)
	short, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	if _, err := d0.Enter(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("enter with a short context = %v", err)
	}
	cancel()
	results := make(chan error, 3)
	for _, ex := range exs {
		d, _ := barrier.NewDoubleClient(ex, "/blocking/double", 3)
		go func() {
			p, err := d.Enter(ctx)
			if err == nil {
				err = d.Leave(ctx, p)
			}
			results <- err
		}()
	}
	for range exs {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	// The canceled Enter's node was cleaned up: only the ready node is left.
	got, err := executor.Await(ctx, exs[0], task.Children("/blocking/double"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range got.Names {
		if strings.HasPrefix(n, "_p_") {
			t.Fatalf("participant node left: %v", got.Names)
		}
	}
}

// listCounter counts the children listings a client sends.
type listCounter struct {
	*fakezk.Conn
	lists *int
}

func (c *listCounter) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if _, ok := req.(*task.GetChildrenRequest); ok {
		*c.lists++
	}
	c.Conn.Do(req, done, watch)
}

// No herd in Leave: with five participants, the lowest starting to leave
// first and the others one by one, each participant but the lowest lists
// the directory twice (once to find its place, once when the lowest is
// gone); the lowest lists once per participant.
func TestLeaveWakesNoHerd(t *testing.T) {
	const n = 5
	lists := make([]int, n)
	w, err := sim.New(sim.Config{Seed: 8, Clients: n, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		return &listCounter{Conn: c, lists: &lists[i]}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d, _ := barrier.NewDouble("/herd", n)
	ps := make([]*sim.Outcome[*barrier.Participant], n)
	for i := range ps {
		ps[i] = sim.Submit(w, i, d.Enter())
	}
	w.Drive()
	// The lowest is the one with the lowest sequence number (the last 10
	// digits of its name), as the recipe orders.
	seq := func(p *barrier.Participant) string { s := p.Path(); return s[len(s)-10:] }
	lowest := 0
	for i, p := range ps {
		if !p.Done || p.Err != nil {
			t.Fatalf("enter %d: %+v", i, p)
		}
		if seq(p.V) < seq(ps[lowest].V) {
			lowest = i
		}
	}
	clear(lists)
	leaves := make([]*sim.Outcome[task.Unit], n)
	leaves[lowest] = sim.Submit(w, lowest, ps[lowest].V.Leave())
	w.Drive()
	for i := range ps {
		if i != lowest {
			leaves[i] = sim.Submit(w, i, ps[i].V.Leave())
			w.Drive()
		}
	}
	for i, l := range leaves {
		if !l.Done || l.Err != nil {
			t.Fatalf("leave %d: %+v", i, l)
		}
	}
	for i, got := range lists {
		want := 2
		if i == lowest {
			want = n
		}
		if got > want {
			t.Errorf("participant %d (lowest %v) listed %d times, want at most %d", i, i == lowest, got, want)
		}
	}
	t.Logf("listings per participant during Leave: %v (lowest: %d)", lists, lowest)
}

// seqSuffix is the sequence number a server appended to path: its last
// ten characters.
func seqSuffix(path string) string { return path[len(path)-10:] }

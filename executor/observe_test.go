package executor_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// recorder is an Observer that writes down everything, in the order it
// heard it (one lock: OnOpEnd and OnConn come from the connection's
// goroutines).
type recorder struct {
	mu       sync.Mutex
	log      []string
	starts   []task.OpInfo
	ends     []task.OpDone
	flows    map[uint64]string // "started", then "ended"
	flowErr  map[uint64]error
	sessions []task.SessionChange
	retries  []task.RetryInfo
	queues   []task.QueueDepths
	conns    []task.ConnEvent
}

func newRecorder() *recorder {
	return &recorder{flows: map[uint64]string{}, flowErr: map[uint64]error{}}
}

func (r *recorder) observer() *task.Observer {
	return &task.Observer{
		OnFlowStart: func(f task.FlowInfo) any {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.flows[f.ID] != "" {
				r.log = append(r.log, fmt.Sprintf("flow %d started twice", f.ID))
			}
			r.flows[f.ID] = "started"
			r.log = append(r.log, fmt.Sprintf("flow %d start", f.ID))
			return f.ID * 10 // the tag
		},
		OnFlowEnd: func(f task.FlowDone) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.flows[f.ID] != "started" || f.Tag != f.ID*10 {
				r.log = append(r.log, fmt.Sprintf("flow %d ended in state %q with tag %v", f.ID, r.flows[f.ID], f.Tag))
			}
			r.flows[f.ID] = "ended"
			r.flowErr[f.ID] = f.Err
			r.log = append(r.log, fmt.Sprintf("flow %d end", f.ID))
		},
		OnOpStart: func(op task.OpInfo) any {
			r.mu.Lock()
			defer r.mu.Unlock()
			flow := uint64(0)
			if op.Flow != nil {
				flow = op.Flow.ID
				if r.flows[flow] != "started" {
					r.log = append(r.log, fmt.Sprintf("op of flow %d, in state %q", flow, r.flows[flow]))
				}
			}
			r.starts = append(r.starts, op)
			r.log = append(r.log, fmt.Sprintf("op %d %s %s start (flow %d)", op.Seq, op.Req.OpName(), op.Req.NodePath(), flow))
			return op.Seq
		},
		OnOpEnd: func(op task.OpDone) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ends = append(r.ends, op)
			r.log = append(r.log, fmt.Sprintf("op %d end: %v", op.Seq, op.Err))
		},
		OnSession: func(s task.SessionChange) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.sessions = append(r.sessions, s)
		},
		OnRetry: func(ri task.RetryInfo) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.retries = append(r.retries, ri)
		},
		OnQueues: func(q task.QueueDepths) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.queues = append(r.queues, q)
		},
		OnConn: func(ev task.ConnEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.conns = append(r.conns, ev)
		},
	}
}

// checkOps checks that every op started was seen ending once, with the
// tag its start returned, and that no op ended without starting.
func (r *recorder) checkOps(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	ended := map[uint64]int{}
	for _, d := range r.ends {
		ended[d.Seq]++
		if d.Tag != d.Seq {
			t.Errorf("op %d: tag %v, want what OnOpStart returned", d.Seq, d.Tag)
		}
		if d.End.Before(d.Start) {
			t.Errorf("op %d ends before it starts", d.Seq)
		}
	}
	for _, s := range r.starts {
		if ended[s.Seq] != 1 {
			t.Errorf("op %d (%s %s) ended %d times, want 1", s.Seq, s.Req.OpName(), s.Req.NodePath(), ended[s.Seq])
		}
		delete(ended, s.Seq)
	}
	for seq := range ended {
		t.Errorf("op %d ended without starting", seq)
	}
	for _, l := range r.log {
		if len(l) > 4 && (l[:4] == "op o" || l[len(l)-5:] == "twice") {
			t.Error(l)
		}
	}
}

type fakeRig struct {
	clk  *fakezk.Clock
	srv  *fakezk.Server
	conn *fakezk.Conn
	ex   *executor.Executor
	rec  *recorder
}

func newFakeRig(t *testing.T) *fakeRig {
	t.Helper()
	rec := newRecorder()
	obs := rec.observer()
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Seed: 7, Clock: clk, Deterministic: true})
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second, Observer: obs})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 7, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Shutdown)
	r := &fakeRig{clk: clk, srv: srv, conn: conn, ex: ex, rec: rec}
	r.drive()
	return r
}

// drive runs the executor and the server, and the clock's timers, until
// nothing is left to do.
func (r *fakeRig) drive() {
	for {
		for r.ex.RunUntilIdle()+r.srv.RunUntilIdle() > 0 {
		}
		if !r.clk.AdvanceToNext() {
			return
		}
	}
}

// driveNoTime runs the executor and the server without moving the clock.
func (r *fakeRig) driveNoTime() {
	for r.ex.RunUntilIdle()+r.srv.RunUntilIdle() > 0 {
	}
}

// Every operation a flow sends is seen once starting, before the
// connection has it, and once ending with its outcome and the latency on
// the executor's clock; ends come in the order the session completes them;
// the flow's start comes before its operations and its end after them.
func TestObserverOperations(t *testing.T) {
	r := newFakeRig(t)
	var flowErr error
	chain := c.Then(task.Create("/a", []byte("x"), task.Persistent), func(string) task.Task[task.Data] {
		return c.Then(task.Get("/a"), func(task.Data) task.Task[task.Data] {
			return c.Then(task.Set("/a", nil, 7), func(task.Stat) task.Task[task.Data] { return task.Get("/never") })
		})
	})
	executor.Submit(r.ex, chain, func(_ task.Data, err error) { flowErr = err })
	// The server holds its deliveries for 250ms: the first reply comes
	// 250ms of the clock after the request.
	r.srv.Delay(r.conn, 250*time.Millisecond)
	r.drive()
	if !errors.Is(flowErr, task.ErrBadVersion) {
		t.Fatalf("flow: %v, want bad version", flowErr)
	}
	r.rec.checkOps(t)
	rec := r.rec
	var got []string
	for _, d := range rec.ends {
		got = append(got, fmt.Sprintf("%d %s %s %v", d.Seq, d.Req.OpName(), d.Req.NodePath(), d.Err))
	}
	want := []string{"1 create /a <nil>", "2 get /a <nil>", fmt.Sprintf("3 set /a %v", task.ErrBadVersion)}
	if !slices.Equal(got, want) {
		t.Fatalf("ops ended:\n%q\nwant\n%q", got, want)
	}
	if l := rec.ends[0].Latency(); l != 250*time.Millisecond {
		t.Errorf("first op latency %v, want the server's 250ms delay", l)
	}
	for _, d := range rec.ends {
		if d.Flow == nil || d.Flow.ID != 1 || d.Flow.Tag != uint64(10) {
			t.Errorf("op %d: flow %+v, want flow 1 with its tag", d.Seq, d.Flow)
		}
		if d.Session == 0 || d.Session != r.conn.SessionID() {
			t.Errorf("op %d: session %#x, want %#x", d.Seq, d.Session, r.conn.SessionID())
		}
	}
	wantLog := []string{"flow 1 start", "op 1 create /a start (flow 1)", "op 1 end: <nil>", "op 2 get /a start (flow 1)", "op 2 end: <nil>",
		"op 3 set /a start (flow 1)", "op 3 end: " + task.ErrBadVersion.Error(), "flow 1 end"}
	if !slices.Equal(rec.log, wantLog) {
		t.Fatalf("log:\n%q\nwant\n%q", rec.log, wantLog)
	}
	if !errors.Is(rec.flowErr[1], task.ErrBadVersion) {
		t.Errorf("OnFlowEnd err %v", rec.flowErr[1])
	}
}

// A watched operation (ExistsW, GetW, ChildrenW) is attributed to its
// flow as a plain one is.
func TestObserverWatchedOperations(t *testing.T) {
	r := newFakeRig(t)
	var flowErr error
	chain := c.Then(task.ExistsW("/"), func(task.StatWatch) task.Task[task.DataWatch] {
		return c.Then(task.GetW("/"), func(task.DataWatch) task.Task[task.DataWatch] {
			return c.Then(task.ChildrenW("/"), func(task.ChildrenWatch) task.Task[task.DataWatch] { return task.GetW("/none") })
		})
	})
	executor.Submit(r.ex, chain, func(_ task.DataWatch, err error) { flowErr = err })
	r.drive()
	if !errors.Is(flowErr, task.ErrNoNode) {
		t.Fatalf("flow: %v, want no node", flowErr)
	}
	r.rec.checkOps(t)
	if len(r.rec.ends) != 4 {
		t.Fatalf("%d ops ended, want 4", len(r.rec.ends))
	}
	for _, d := range r.rec.ends {
		if d.Flow == nil || d.Flow.ID != 1 || d.Flow.Tag != uint64(10) {
			t.Errorf("op %d (%s %s): flow %+v, want flow 1 with its tag", d.Seq, d.Req.OpName(), d.Req.NodePath(), d.Flow)
		}
	}
}

// Operations in flight when the connection drops are seen ending with
// the connection's verdict, in order, each once; a flow ended by Cancel
// before it started is still seen starting and then ending.
func TestObserverConnectionLossAndCancel(t *testing.T) {
	r := newFakeRig(t)
	var errs [3]error
	for i := range errs {
		executor.Submit(r.ex, task.Get("/"), func(_ task.Data, err error) { errs[i] = err })
	}
	r.ex.RunUntilIdle() // sent, not answered
	r.srv.Drop(r.conn, false)
	r.driveNoTime()
	for i, err := range errs {
		if !errors.Is(err, task.ErrConnectionLoss) {
			t.Fatalf("flow %d: %v, want connection loss", i, err)
		}
	}
	r.rec.checkOps(t)
	for i, d := range r.rec.ends {
		if d.Seq != uint64(i+1) || d.Err != task.ErrConnectionLoss {
			t.Errorf("end %d: op %d %v, want op %d connection loss", i, d.Seq, d.Err, i+1)
		}
	}

	// Suspended: a submitted flow waits in the task queue, and is seen
	// ending when canceled there.
	r.srv.Partition(r.conn, time.Second, false)
	r.driveNoTime()
	var canceled error
	f := executor.Submit(r.ex, task.Get("/"), func(_ task.Data, err error) { canceled = err })
	r.driveNoTime()
	f.Cancel()
	r.driveNoTime()
	if !errors.Is(canceled, task.ErrCanceled) {
		t.Fatalf("canceled flow: %v", canceled)
	}
	r.rec.mu.Lock()
	last := r.rec.log[len(r.rec.log)-2:]
	r.rec.mu.Unlock()
	if !slices.Equal(last, []string{"flow 4 start", "flow 4 end"}) {
		t.Errorf("a flow canceled in the queue: log ends %q", last)
	}
}

// Session transitions are seen in order, each From the previous To:
// connected, suspended by a partition, resumed, expired, a new session;
// and the connection's own facts (attempts, resumes) reach OnConn.
func TestObserverSessions(t *testing.T) {
	r := newFakeRig(t)
	first := r.conn.SessionID()
	r.srv.Partition(r.conn, time.Second, false)
	r.drive()
	r.srv.Expire(r.conn)
	r.drive()
	second := r.conn.SessionID()
	if second == first {
		t.Fatal("no new session after expiry")
	}
	rec := r.rec
	var got []string
	prev := task.StateConnecting
	for _, s := range rec.sessions {
		if s.From != prev {
			t.Errorf("transition %v -> %v follows one to %v", s.From, s.To, prev)
		}
		prev = s.To
		got = append(got, fmt.Sprintf("%v %#x", s.To, s.SessionID))
	}
	want := []string{
		fmt.Sprintf("%v %#x", task.StateConnected, first),
		fmt.Sprintf("%v %#x", task.StateSuspended, 0),
		fmt.Sprintf("%v %#x", task.StateConnected, first),
		fmt.Sprintf("%v %#x", task.StateSuspended, 0),
		fmt.Sprintf("%v %#x", task.StateExpired, first),
		fmt.Sprintf("%v %#x", task.StateConnected, second),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("transitions:\n%q\nwant\n%q", got, want)
	}
	if at := rec.sessions[2].At.Sub(rec.sessions[1].At); at != time.Second {
		t.Errorf("suspended for %v, want the partition's 1s", at)
	}
	var conns []string
	for _, ev := range rec.conns {
		conns = append(conns, fmt.Sprintf("%v %#x reconnect=%v", ev.Kind, ev.Session, ev.Reconnect))
	}
	wantConns := []string{
		fmt.Sprintf("established %#x reconnect=false", first),
		fmt.Sprintf("attempt %#x reconnect=false", first),
		fmt.Sprintf("established %#x reconnect=true", first),
	}
	if len(conns) < len(wantConns) || !slices.Equal(conns[:3], wantConns) {
		t.Fatalf("connection facts:\n%q\nwant first\n%q", conns, wantConns)
	}
	if conns[len(conns)-1] != fmt.Sprintf("established %#x reconnect=false", second) {
		t.Errorf("last connection fact %q, want the new session established", conns[len(conns)-1])
	}
}

// Each retry is seen once, numbered from 2, with the error that caused it
// and the flow retrying.
func TestObserverRetries(t *testing.T) {
	r := newFakeRig(t)
	calls := 0
	flaky := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		calls++
		if calls < 4 {
			k(0, task.ErrNotSent)
			return
		}
		k(calls, nil)
	})
	p := c.Policy{Attempts: 5, Backoff: c.Backoff{Initial: 10 * time.Millisecond, Multiplier: 2}}
	var got int
	executor.Submit(r.ex, c.Retry(flaky, p), func(v int, err error) { got = v })
	r.drive()
	if got != 4 {
		t.Fatalf("retried task returned %d, want 4", got)
	}
	var seen []string
	for _, ri := range r.rec.retries {
		fid := uint64(0)
		if ri.Flow != nil {
			fid = ri.Flow.ID
		}
		seen = append(seen, fmt.Sprintf("attempt %d after %v wait %v flow %d", ri.Attempt, ri.Err, ri.Wait, fid))
	}
	want := []string{
		fmt.Sprintf("attempt 2 after %v wait 10ms flow 1", task.ErrNotSent),
		fmt.Sprintf("attempt 3 after %v wait 20ms flow 1", task.ErrNotSent),
		fmt.Sprintf("attempt 4 after %v wait 40ms flow 1", task.ErrNotSent),
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("retries:\n%q\nwant\n%q", seen, want)
	}
}

// OnQueues sees the task queue grow while the session is suspended, and
// paused.
func TestObserverQueues(t *testing.T) {
	r := newFakeRig(t)
	r.srv.Partition(r.conn, time.Second, false)
	r.driveNoTime()
	for range 5 {
		executor.Submit(r.ex, task.Get("/"), nil)
	}
	r.ex.RunUntilIdle()
	q := r.rec.queues[len(r.rec.queues)-1]
	if !q.Paused || q.Tasks != 5 || q.Moved != 5 {
		t.Fatalf("queues while suspended: %+v, want 5 tasks moved and waiting, paused", q)
	}
	r.drive()
	r.rec.checkOps(t)
	if n := len(r.rec.ends); n != 5 {
		t.Fatalf("%d ops ended after the reconnect, want 5", n)
	}
}

// An executor with no connection fails every request with ErrClosed
// itself; the Observer sees each once, with that outcome.
func TestObserverNoConnection(t *testing.T) {
	rec := newRecorder()
	ex, err := executor.New(executor.Config{Observer: rec.observer()})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	var got error
	executor.Submit(ex, task.Get("/x"), func(_ task.Data, err error) { got = err })
	ex.RunUntilIdle()
	if !errors.Is(got, task.ErrClosed) {
		t.Fatalf("got %v", got)
	}
	rec.checkOps(t)
	if len(rec.ends) != 1 || rec.ends[0].Err != task.ErrClosed {
		t.Fatalf("ends %+v", rec.ends)
	}
}

// An Observer with only some callbacks set is fine: the others do nothing.
func TestObserverPartial(t *testing.T) {
	n := 0
	ex, err := executor.New(executor.Config{Observer: &task.Observer{OnOpEnd: func(task.OpDone) { n++ }}})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	executor.Submit(ex, c.Retry(task.Get("/x"), c.Policy{Attempts: 2, On: []error{task.ErrClosed}}), nil)
	ex.RunUntilIdle()
	if n != 2 {
		t.Fatalf("OnOpEnd called %d times, want 2", n)
	}
}

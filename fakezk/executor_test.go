package fakezk_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// drive runs an executor and a deterministic server until neither has
// anything left to do.
func drive(ex *executor.Executor, srv *fakezk.Server) {
	for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
	}
}

// The executor's chains run on a deterministic fake: a create and a read,
// then the session expires under a watch, and the chain learns of it.
func TestExecutorOnFake(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Seed: 3, Clock: clk, Deterministic: true, Trace: true})
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()

	var got string
	flow := c.Then(task.Create("/cfg", []byte("v1"), task.Ephemeral), func(string) task.Task[task.DataWatch] {
		return task.GetW("/cfg")
	})
	var w *task.Watch
	executor.Submit(ex, flow, func(d task.DataWatch, err error) {
		if err != nil {
			t.Errorf("flow: %v", err)
			return
		}
		got, w = string(d.Data.Data), d.Watch
	})
	drive(ex, srv)
	if got != "v1" || w == nil {
		t.Fatalf("got %q, watch %v\n%s", got, w, srv.Trace())
	}
	var waitErr error
	executor.Submit(ex, w.Wait(), func(_ task.Event, err error) { waitErr = err })
	srv.Expire(conn)
	drive(ex, srv)
	if waitErr == nil {
		t.Fatalf("watch wait ended without error after expiry")
	}
	if _, ok := srv.NodeStat("/cfg"); ok {
		t.Fatal("ephemeral survived expiry")
	}
}

// BenchmarkExecutorOps is simple operations through the executor and a
// fake in automatic mode: a Loop of task.Exists chains, 1000 per flow.
func BenchmarkExecutorOps(b *testing.B) {
	srv := fakezk.New(fakezk.Config{})
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ex.Shutdown)
	ex.RunUntilIdle()
	const batch = 1000
	exists := task.Exists("/")
	body := func(i int) task.Task[int] {
		return c.Map(exists, func(*task.Stat) int { return i + 1 })
	}
	loop := c.Loop(0, func(i int) bool { return i < batch }, body)
	var last int
	k := func(n int, err error) {
		if err != nil {
			b.Fatal(err)
		}
		last = n
	}
	for b.Loop() {
		executor.Submit(ex, loop, k)
		ex.RunUntilIdle()
	}
	if last != batch {
		b.Fatalf("loop ran %d ops, want %d", last, batch)
	}
	b.ReportMetric(batch*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e9/(batch*float64(b.N)), "ns/zkop")
}

// A request made by a flow of a session that has ended, sent after the
// connection moved to a new session but before the executor heard of it,
// is refused: sent on the new session it would create an ephemeral node
// that no flow owns.
func TestRequestOfEndedSessionRefused(t *testing.T) {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Seed: 1, Clock: clk, Deterministic: true})
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	drive(ex, srv)
	first := conn.SessionID()

	// Held deliveries keep the expiry and the new session from the client
	// while the connection itself moves on.
	srv.Delay(conn, time.Second)
	srv.Expire(conn)
	for srv.RunUntilIdle() > 0 {
	}
	if !conn.Connected() || conn.SessionID() == first {
		t.Fatalf("connection not on a new session (connected %v, id %x, first %x)", conn.Connected(), conn.SessionID(), first)
	}
	var got error
	ended := false
	executor.Submit(ex, task.Create("/orphan", nil, task.Ephemeral), func(_ string, err error) { got, ended = err, true })
	ex.RunUntilIdle() // the executor still takes the first session as current
	clk.Advance(time.Second)
	drive(ex, srv)
	if !ended || !errors.Is(got, task.ErrSessionExpired) {
		t.Fatalf("create of the ended session: ended %v, err %v; want ErrSessionExpired", ended, got)
	}
	if slices.Contains(srv.Paths(), "/orphan") {
		t.Fatal("the ended session's create was applied on the new session")
	}
	// Flows of the new session work.
	executor.Submit(ex, task.Create("/mine", nil, task.Ephemeral), func(_ string, err error) { got, ended = err, true })
	drive(ex, srv)
	if got != nil || !slices.Contains(srv.Paths(), "/mine") {
		t.Fatalf("create on the new session: %v", got)
	}
}

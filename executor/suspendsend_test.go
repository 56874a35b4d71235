package executor_test

import (
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/scriptconn"
	"github.com/zkflow/zkflow/task"
)

// The package doc: after a reconnect the executor "sends a sync ahead of
// every other request of the new connection", and what an event's
// continuation runs while the session is suspended "reaches no server".
//
// A flow's write is on the wire when the connection is cut; its deadline
// fires while suspended (the timer posts to the inbox), then the
// connection comes back (Connected posted after the timer). The next
// Step runs the deadline's job first: its Catch handler's read used to go
// to the connection, back already, ahead of the sync the Connected job
// then sent ([set get sync]: this test failed on the code before the
// fix). The executor now fails a request sent while it is suspended with
// task.ErrNotSent, unsent, as the doc says the connection does.
func TestNothingGoesAheadOfTheSyncAfterACut(t *testing.T) {
	conn := scriptconn.New()
	clk := fakezk.NewClock(time.Time{}) // Advance fires timers on the calling goroutine
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 1, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Shutdown)
	ex.RunUntilIdle()
	conn.Connect(1)
	ex.RunUntilIdle()
	at := clk.Now().Add(time.Second)
	settle := c.Catch(c.Deadline(task.Set("/a", []byte("x"), task.AnyVersion), at),
		func(error) task.Task[task.Stat] {
			return c.Map(task.Get("/a"), func(d task.Data) task.Stat { return d.Stat })
		})
	var outcome error
	done := false
	executor.Submit(ex, settle, func(_ task.Stat, err error) { outcome, done = err, true })
	ex.RunUntilIdle() // the set is on the wire
	conn.Suspend()
	ex.RunUntilIdle()
	clk.Advance(time.Second) // the deadline's timer posts to the inbox...
	conn.Connect(1)          // ...then the connection is back
	ex.RunUntilIdle()
	var names []string
	for _, cl := range conn.Calls() {
		names = append(names, cl.Req.OpName())
	}
	if len(names) < 2 || names[0] != "set" || names[1] != "sync" {
		t.Fatalf("requests %v: want the set, then the sync first on the new connection", names)
	}
	if !done || !errors.Is(outcome, task.ErrNotSent) {
		t.Fatalf("the handler's read, run while suspended: done %v, %v; want task.ErrNotSent, unsent", done, outcome)
	}
}

// The same schedule on fakezk, the connection coming back through a
// member that has not applied the lost create: a settling read retried
// after connection loss (as flows settle a lost write) sees the create,
// whether the deadline fires before the partition heals (900ms: its read
// was sent ahead of the sync and answered by the lagging member, "/a is
// not there", before the fix) or after it (1.5s).
func TestSettlingReadAfterACutDeadlineSeesTheLostCreate(t *testing.T) {
	for _, dl := range []time.Duration{900 * time.Millisecond, 1500 * time.Millisecond} {
		t.Run(dl.String(), func(t *testing.T) { settleAfterCut(t, dl) })
	}
}

func settleAfterCut(t *testing.T, dl time.Duration) {
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Seed: 7, Clock: clk, Deterministic: true})
	srv.KeepHistory()
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 7}) // sync after reconnect on
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Shutdown)
	drive := func() {
		for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
		}
	}
	drive()
	var got *task.Stat
	var gotErr error = errors.New("no outcome")
	at := clk.Now().Add(dl)
	settle := c.Catch(
		c.Map(c.Deadline(task.Create("/a", nil, task.Persistent), at), func(string) *task.Stat { return &task.Stat{} }),
		func(err error) task.Task[*task.Stat] {
			return c.Retry(task.Exists("/a"), c.Policy{Attempts: 5, On: []error{task.ErrConnectionLoss, task.ErrNotSent}})
		})
	executor.Submit(ex, settle, func(s *task.Stat, err error) { got, gotErr = s, err })
	ex.RunUntilIdle() // the create is on the wire
	srv.LagAtReconnect(conn, time.Minute, true)
	srv.Partition(conn, time.Second, true)
	drive()
	if _, ok := srv.NodeStat("/a"); !ok {
		t.Fatal("the create in flight was not applied")
	}
	clk.Advance(time.Second) // the deadline fires (900ms), then the partition heals
	srv.RunUntilIdle()       // the connection is back (Connected posted)
	drive()
	if gotErr != nil {
		t.Fatalf("settle: %v", gotErr)
	}
	if got == nil {
		t.Fatal("the settling read, sent after the reconnect, says /a is not there: it overtook the executor's sync")
	}
}

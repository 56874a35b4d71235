package executor_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

// The package doc, "After a reconnect": a create is applied as the
// connection is cut, its reply lost, and the session comes back through a
// member that has applied only what the client heard before the cut
// (ZooKeeper's handshake lets it; fakezk's LagAtReconnect, held). A plain
// read sent after the reconnect sees the create: the executor's sync went
// ahead of it. With Config.NoSyncAfterReconnect the same read is answered
// from the member's view and says the node is not there (a flow settling
// its lost create would make a second node): the test can fail.
func TestReadAfterCutSeesTheLostWrite(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSyncAfterReconnect=%v", noSync), func(t *testing.T) {
			st, err := readAfterCut(t, noSync)
			switch {
			case err != nil:
				t.Fatalf("exists /a after the reconnect: %v", err)
			case noSync && st != nil:
				t.Fatalf("without the sync, exists /a after the reconnect = %+v; want it answered from the lagging view (none): the test shows nothing", st)
			case !noSync && st == nil:
				t.Fatal("exists /a after the reconnect: none; want the node the lost create made")
			}
		})
	}
}

// readAfterCut runs the schedule above and returns what the read said.
func readAfterCut(t *testing.T, noSync bool) (*task.Stat, error) {
	t.Helper()
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Seed: 7, Clock: clk, Deterministic: true})
	srv.KeepHistory()
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 7, NoSyncAfterReconnect: noSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Shutdown)
	// drive runs the executor and the server without moving the clock:
	// the lag lasts until the test ends.
	drive := func() {
		for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
		}
	}
	drive()
	var createErr error = errors.New("no outcome")
	executor.Submit(ex, task.Create("/a", nil, task.Persistent), func(_ string, err error) { createErr = err })
	ex.RunUntilIdle() // the create is on the wire
	srv.LagAtReconnect(conn, time.Minute, true)
	srv.Partition(conn, time.Second, true)
	drive()
	made, ok := srv.NodeStat("/a")
	if !ok {
		t.Fatal("the create in flight was not applied")
	}
	clk.Advance(time.Second) // the partition heals
	srv.RunUntilIdle()
	if lagging, view := conn.Lagging(); !lagging || view >= made.Czxid {
		t.Fatalf("lagging %v at view %d: the session came back through a member that has applied the create: the test shows nothing", lagging, view)
	}
	drive()
	if !errors.Is(createErr, task.ErrConnectionLoss) {
		t.Fatalf("create cut off: %v, want connection loss", createErr)
	}
	var st *task.Stat
	var readErr error = errors.New("no outcome")
	executor.Submit(ex, task.Exists("/a"), func(s *task.Stat, err error) { st, readErr = s, err })
	drive()
	return st, readErr
}

// The sync goes out once per reconnect, on the same session or a new
// one, ahead of every request of the new connection (a retry waiting for
// the reconnect included); none at the first connection.
func TestSyncAfterReconnect(t *testing.T) {
	r := rig.NewSyncing(t)
	if n := len(r.Conn.Calls()); n != 0 {
		t.Fatalf("%d requests at the first connection, want none", n)
	}
	o := rig.Submit(r, c.Retry(task.Get("/a"), c.Policy{Attempts: 0}))
	r.Idle()
	r.Conn.Suspend()
	r.Conn.Pending()[0].Fail(task.ErrConnectionLoss)
	r.Idle()
	r.Conn.Connect(1)
	r.Idle()
	ops := func() []string {
		var names []string
		for _, cl := range r.Conn.Calls() {
			names = append(names, cl.Req.OpName())
		}
		return names
	}
	if got := fmt.Sprint(ops()); got != "[get sync get]" {
		t.Fatalf("requests %s, want the read, then after the reconnect a sync and the retry", got)
	}
	for _, p := range r.Conn.Pending() {
		if p.Req.OpName() == "get" {
			p.Reply(task.Response{Data: []byte("v")})
		} else {
			p.Reply(task.Response{})
		}
	}
	r.Idle()
	o.Want(t, 1, nil)
	r.Conn.Expire()
	r.Conn.Connect(2)
	r.Idle()
	if got := fmt.Sprint(ops()); got != "[get sync get sync]" {
		t.Fatalf("requests %s, want a sync at the new session's connection too", got)
	}
}

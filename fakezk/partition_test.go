package fakezk_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// A partition of a Conn that has not started yet holds: started within
// it, the client connects only when it heals (a client cut off from the
// server cannot open a session), not at once. A Drop before the start has
// nothing to break.
func TestPartitionBeforeStart(t *testing.T) {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk, Deterministic: true})
	defer srv.Close()
	c := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	srv.Drop(c, false)
	srv.Partition(c, time.Second, false)
	var states []task.State
	if err := c.Start(func(ev task.Event) { states = append(states, ev.State) }); err != nil {
		t.Fatal(err)
	}
	srv.RunUntilIdle()
	clk.Advance(999 * time.Millisecond)
	srv.RunUntilIdle()
	if c.Connected() || len(states) != 0 {
		t.Fatalf("connected %v, told %v within the partition", c.Connected(), states)
	}
	clk.Advance(time.Millisecond)
	srv.RunUntilIdle()
	if !c.Connected() || len(states) != 1 || states[0] != task.StateConnected {
		t.Fatalf("after the partition healed: connected %v, told %v", c.Connected(), states)
	}
}

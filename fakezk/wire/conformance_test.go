package wire_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/conformance"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
)

// TestConformanceThroughZkadapter runs the conformance table through the
// production path, zkadapter over go-zookeeper over TCP, against fakezk on
// the wire: the same cases zkadapter runs against a real 3.8 server
// (zkadapter's TestConformance).
func TestConformanceThroughZkadapter(t *testing.T) {
	// Each case has a server of its own, so the cases run in shards side
	// by side: most of their time is the clients' reconnect pauses.
	const shards = 8
	cases := conformance.Cases()
	for i := range shards {
		var mine []conformance.Case
		for j := i; j < len(cases); j += shards {
			mine = append(mine, cases[j])
		}
		t.Run(fmt.Sprint("shard", i), func(t *testing.T) {
			t.Parallel()
			conformance.RunCases(t, mine, func(tb testing.TB) conformance.Target {
				clk := fakezk.NewClock(time.Time{})
				return &wireTarget{clk: clk, r: start(tb, fakezk.Config{Clock: clk, TickTime: 2 * time.Second})}
			})
		})
	}
}

// wireTarget serves conformance cases from one fakezk server on the wire,
// on a fakezk.Clock: sessions expire and partitions heal when a case
// advances it (the clients' own timers run in real time).
type wireTarget struct {
	r     *rig
	clk   *fakezk.Clock
	heals map[*fakezk.Conn]time.Time // partitions and when they heal
}

func (w *wireTarget) SetCounters(t testing.TB, path string, version, cversion int32) {
	t.Helper()
	if err := w.r.zk.SetCounters(path, version, cversion); err != nil {
		t.Fatal(err)
	}
}

func (w *wireTarget) Partition(t testing.TB, c task.Conn, d time.Duration) {
	t.Helper()
	fc := w.conn(t, c)
	if w.heals == nil {
		w.heals = map[*fakezk.Conn]time.Time{}
	}
	w.heals[fc] = w.clk.Now().Add(d)
	w.r.zk.Partition(fc, d, false)
}

// Advance moves the clock timer by timer. When a partition heals, the
// client reconnects in real time: Advance waits for it (at most 10s) before
// it moves on, as an in-process client reconnects at the heal itself.
func (w *wireTarget) Advance(d time.Duration) {
	end := w.clk.Now().Add(d)
	for {
		next, ok := w.clk.NextTimer()
		if !ok || next.After(end) {
			break
		}
		w.clk.Set(next)
		for fc, at := range w.heals {
			if at.After(next) {
				continue
			}
			delete(w.heals, fc)
			wait := time.NewTimer(10 * time.Second)
			for fc.SessionID() != 0 && w.r.zk.SessionConn(fc.SessionID()) == fc && !fc.Connected() {
				select {
				case <-wait.C:
					return
				case <-w.r.attached: // a connection attached: look again
				}
			}
			wait.Stop()
		}
	}
	w.clk.Set(end)
}

func (w *wireTarget) conn(t testing.TB, c task.Conn) *fakezk.Conn {
	t.Helper()
	fc := w.r.zk.SessionConn(c.(*zkadapter.Conn).SessionID())
	if fc == nil {
		t.Fatalf("no live session %#x", c.(*zkadapter.Conn).SessionID())
	}
	return fc
}

func (w *wireTarget) NewConn(t testing.TB, timeout time.Duration) task.Conn {
	return w.newConn(t, timeout, nil)
}

func (w *wireTarget) NewAuthConn(t testing.TB, timeout time.Duration, auth []task.AuthInfo) task.Conn {
	return w.newConn(t, timeout, auth)
}

func (w *wireTarget) newConn(t testing.TB, timeout time.Duration, auth []task.AuthInfo) task.Conn {
	c, err := zkadapter.New(zkadapter.Config{Servers: []string{w.r.addr}, SessionTimeout: timeout, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (w *wireTarget) Settle() {}

func (w *wireTarget) Expire(t testing.TB, c task.Conn) {
	t.Helper()
	w.r.zk.Expire(w.conn(t, c))
}

func (w *wireTarget) Drop(t testing.TB, c task.Conn, applied bool) {
	t.Helper()
	w.r.zk.Drop(w.conn(t, c), applied)
}

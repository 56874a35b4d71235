package cache

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/task"
)

// After an expiry the cache reads everything again on the new session,
// which its client opens presenting no zxid: the member it reaches may be
// behind what the old session read (fakezk: LagAtNewSession). The cache
// syncs first, so it never goes back in time: it had served /n at
// version 1, and after the expiry it serves version 1 still, not the
// version 0 the lagging member holds (with the sync off, the canary, it
// goes back to 0).
func TestNewSessionBehindTheOldOneIsNotBackInTime(t *testing.T) {
	canarytest.Both(t, bugNoSyncNewSession, func(t *testing.T, bug bool) {
		w := newWorld(t, 2)
		w.Server.KeepHistory()
		w.Server.LagWatchedReads(true) // the cache's reads set watches: answered from the view too
		must(sim.Run(w, 1, task.Create("/n", []byte("v0"), task.Persistent)))
		nc := must(NewNode("/n"))
		must(sim.Run(w, 1, task.Set("/n", []byte("v1"), 0)))
		must(sim.Run(w, 0, nc.Start()))
		n, ok := nc.Current()
		if !ok || string(n.Data) != "v1" {
			t.Fatalf("cached before the expiry: %q %v, want v1", n.Data, ok)
		}
		w.Server.LagAtNewSession(w.Conns[0], time.Minute, true)
		old := w.Conns[0].SessionID()
		w.Server.Expire(w.Conns[0])
		w.Settle(func() bool {
			sid := w.Conns[0].SessionID()
			return sid != 0 && sid != old && w.Execs[0].RunUntilIdle() == 0
		})
		if lagging, _ := w.Conns[0].Lagging(); !lagging {
			t.Fatal("setup: the new session's member does not lag")
		}
		w.Drive()
		n, ok = nc.Current()
		back := !ok || string(n.Data) != "v1"
		if back != bug {
			t.Errorf("cached after the expiry: %q (version %d) %v; back in time %v, want %v", n.Data, n.Stat.Version, ok, back, bug)
		}
	})
}

// The new session's sync comes before any read, also when the new
// session is cut at once and comes back (a reconnect of that session, on
// a member still behind: its client has seen no zxid on it yet) before
// the sync has gone out: the reconnect's relist of a directory whose
// counter has run out waits for the sync instead of reading from the
// lagging member, where the cached child is not there yet. With the
// canary the relist reads first, and a consistent snapshot the cache
// reports (WithOnSynced) has lost the child.
func TestReconnectBeforeTheNewSessionsSyncIsNotBackInTime(t *testing.T) {
	canarytest.Both(t, bugPassBeforeSync, func(t *testing.T, bug bool) {
		w := newWorld(t, 2)
		w.Server.LagWatchedReads(true)
		must(sim.Run(w, 1, task.Create("/d", nil, task.Persistent)))
		w.Server.KeepHistory()                                  // a lagging member has /d, not what follows
		if err := w.SetCounters("/d", 0, 1<<31-1); err != nil { // the counter has run out
			t.Fatal(err)
		}
		must(sim.Run(w, 1, task.Create("/d/k0", nil, task.Persistent)))
		var cc *ChildrenCache
		lost := 0 // consistent snapshots without /d/k0
		cc = must(NewChildren("/d", WithOnSynced(func() {
			if len(cc.Current()) != 1 {
				lost++
			}
		})))
		must(sim.Run(w, 0, cc.Start()))
		if lost != 0 || len(cc.Current()) != 1 {
			t.Fatalf("cached before the expiry: %v, want /d/k0", cc.Current())
		}
		w.Server.LagAtNewSession(w.Conns[0], time.Minute, true)
		old := w.Conns[0].SessionID()
		w.Server.Expire(w.Conns[0]) // the new session is connected at once...
		if sid := w.Conns[0].SessionID(); sid == old || sid == 0 {
			t.Fatalf("setup: no new session at once (%#x)", sid)
		}
		w.Server.LagAtReconnect(w.Conns[0], time.Minute, true)
		w.Server.Drop(w.Conns[0], true) // ...and cut and back before the executor ran
		if lagging, view := w.Conns[0].Lagging(); !lagging || view >= 4 {
			t.Fatalf("setup: the reconnect's member does not lag behind /d/k0's create (lagging %v, view %d)", lagging, view)
		}
		w.Drive()
		if got := lost > 0; got != bug {
			t.Errorf("%d consistent snapshots after the expiry lost /d/k0 (now %v); back in time %v, want %v", lost, cc.Current(), got, bug)
		}
	})
}

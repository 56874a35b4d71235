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

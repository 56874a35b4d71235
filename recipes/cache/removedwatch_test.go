package cache

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/task"
)

// A ChildrenCache and a recursive TreeCache of one path on one session:
// stopping the tree removes every watch of the session on the path
// (RemoveWatches of any kind). The ChildrenCache reads the path again,
// which sets its watch again, and sees the child created after. With the
// removal taken for the session's end (the canary), it stops following
// the path for the rest of the session, its Err nil.
func TestWatchRemovedByAnotherCacheIsSetAgain(t *testing.T) {
	canarytest.Both(t, bugDropRemovedWatch, func(t *testing.T, bug bool) {
		w := newWorld(t, 2)
		must(sim.Run(w, 1, task.Create("/t", nil, task.Persistent)))
		cc := must(NewChildren("/t"))
		must(sim.Run(w, 0, cc.Start()))
		tc := must(NewTree("/t", WithRecursive()))
		must(sim.Run(w, 0, tc.Start()))
		must(sim.Run(w, 0, tc.Stop()))
		w.Drive()
		must(sim.Run(w, 1, task.Create("/t/x", nil, task.Persistent)))
		until := w.Clock.Now().Add(5 * time.Minute)
		w.Settle(func() bool { return len(cc.Current()) == 1 || !w.Clock.Now().Before(until) })
		if got := len(cc.Current()); (got == 1) == bug {
			t.Fatalf("ChildrenCache of /t shows %d children 5 minutes after /t/x was created (Err %v); canary %v", got, cc.Err(), bug)
		}
	})
}

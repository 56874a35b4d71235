package masterworker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
)

// The instant judge keeps the statuses it has seen from check to check:
// it still sees a seen status deleted (the task lost), a task seen done
// queued again, and a status created for a task still queued, each
// planted in the server's tree under a run without faults.
func TestInstantJudgeCatchesPlantedTrees(t *testing.T) {
	for _, c := range []struct {
		name, want string
		plant      func(s *mwSim, r *sim.Trial) bool
	}{
		{"seen status deleted", "lost: in none of", func(s *mwSim, r *sim.Trial) bool {
			for name := range s.doneSeen {
				return r.Server.AdminDelete(r.ServerPath(simRoot+"/status/"+name)) == nil
			}
			return false
		}},
		{"seen done task queued again", "has a status and is still in tasks", func(s *mwSim, r *sim.Trial) bool {
			for name := range s.doneSeen {
				return r.Server.AdminCreate(r.ServerPath(simRoot+"/tasks/"+name), []byte("x"), 0) == nil
			}
			return false
		}},
		{"status of a queued task", "has a status and is still in", func(s *mwSim, r *sim.Trial) bool {
			for _, u := range s.undone {
				if _, ok := s.where[u.name]; ok {
					return r.Server.AdminCreate(r.ServerPath(u.status), []byte("x"), 0) == nil
				}
			}
			return false
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tot simTotals
			s, sc := newMWSim(&tot)
			sc.Faults = sim.Faults{}
			sc.Regressions = nil
			planted := false
			workload := sc.Workload
			sc.Workload = func(r *sim.Trial) {
				workload(r)
				var tick func()
				tick = func() {
					if planted = c.plant(s, r); !planted && r.FaultsOn() {
						r.Clock.AfterFunc(10*time.Millisecond, tick)
					}
				}
				r.Clock.AfterFunc(5*time.Second, tick)
			}
			res := sim.RunSeed(sc, 1, false)
			if !planted {
				t.Fatal("nothing to plant in the whole run: the test checks nothing")
			}
			if res.Err == nil || !strings.Contains(res.Err.Error(), c.want) {
				t.Fatalf("planted, and the seed ended with %v; want a violation saying %q", res.Err, c.want)
			}
		})
	}
}

package barrier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// DoubleClient.Leave accepts a participant entered on its executor and
// directory, also one another DoubleClient of them entered; Enter: "an
// Enter while ... its participant has not been given to Leave, fails at
// once". Once a's participant is given to b's Leave, a's next Enter is
// let in (it was refused for good: only a's own Leave of it cleared a's
// "inside"), and it waits for that Leave's delete as it waits for its own
// (the delete an ACL refuses, then lets: counted in b's count alone, a's
// create would land first, two participant nodes of one session).
func TestLeaveThroughAnotherDoubleClientLetsTheOwnerIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		acl  bool // an ACL refuses the Leave's delete, then goes back
	}{
		{"delete done", false},
		{"ended context", false},
		{"delete refused", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &twoOfOne{dir: "/db", nodes: map[string]int64{}}
			cfg := sim.Config{Seed: 1, Clients: 1, Server: fakezk.Config{Journal: o.journal}}
			if tc.acl {
				cfg.Wrap = sim.ReadOnlyBeforeDelete(0, "/db")
			}
			w, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Close)
			done := false
			var again error
			w.Go(0, func(a *sim.Actor) {
				defer func() { done = true }()
				da, err := barrier.NewDoubleClient(a.Exec(), "/db", 1)
				if err != nil {
					t.Error(err)
					return
				}
				db, _ := barrier.NewDoubleClient(a.Exec(), "/db", 1)
				p, err := da.Enter(a.Context())
				if err != nil {
					t.Error(err)
					return
				}
				switch {
				case tc.acl:
					if err := db.Leave(a.Context(), p); !errors.Is(err, task.ErrNoAuth) {
						t.Errorf("Leave with its delete refused: %v, want task.ErrNoAuth", err)
					}
					if err := a.Sleep(a.Context(), time.Second); err != nil {
						t.Error(err)
					}
					if err := w.Server.AdminSetACL("/db", task.OpenACL); err != nil {
						t.Error(err)
					}
				case tc.name == "ended context":
					ended, cancel := context.WithCancel(a.Context())
					cancel()
					_ = db.Leave(ended, p) // its delete goes on in the background
				default:
					if err := db.Leave(a.Context(), p); err != nil {
						t.Errorf("Leave through the other DoubleClient: %v", err)
					}
				}
				var p2 *barrier.Participant
				p2, again = da.Enter(a.Context())
				if again != nil {
					return
				}
				if err := da.Leave(a.Context(), p2); err != nil {
					t.Error(err)
				}
			})
			if !w.Settle(func() bool { return done }) {
				t.Fatal("stuck")
			}
			if again != nil {
				t.Fatalf("the owner's Enter after its participant was given to another DoubleClient's Leave: %v", again)
			}
			if o.most > 1 {
				t.Errorf("the session had %d participant nodes in %s at once", o.most, o.dir)
			}
			if left := participantNodes(w, "/db"); len(left) > 0 {
				t.Errorf("participant nodes left: %v", left)
			}
		})
	}
}

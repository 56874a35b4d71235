package barrier_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// twoOfOne follows, from the server's journal, the participant nodes under
// dir and the most of one session there at once.
type twoOfOne struct {
	dir   string
	nodes map[string]int64
	most  int
}

func (o *twoOfOne) journal(c fakezk.Commit) {
	for _, n := range c.Nodes {
		if strings.HasPrefix(n.Path, o.dir+"/_p_") && n.Stat.EphemeralOwner != 0 {
			o.nodes[n.Path] = n.Stat.EphemeralOwner
		}
	}
	for _, d := range c.Deleted {
		delete(o.nodes, d)
	}
	per := map[int64]int{}
	for _, s := range o.nodes {
		per[s]++
		o.most = max(o.most, per[s])
	}
}

// A DoubleClient's Leave deletes its participant's node whatever its
// context; when the context has ended (or an ACL refuses the delete) the
// delete goes on in the background. The next Enter of that DoubleClient
// waits for it, as it waits for a failed Enter's cleanup: otherwise its
// create can land first, and the session has two participant nodes at
// once (counted twice). With the delete uncounted (the canary), it does.
func TestEnterAfterLeaveInTheBackground(t *testing.T) {
	for _, tc := range []struct {
		name string
		acl  bool // an ACL refuses the Leave's delete, then goes back
	}{
		{"ended context", false},
		{"delete refused", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			canarytest.Both(t, "barrier/double-leave-uncounted", func(t *testing.T, bug bool) {
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
				w.Go(0, func(a *sim.Actor) {
					defer func() { done = true }()
					d, err := barrier.NewDoubleClient(a.Exec(), "/db", 1)
					if err != nil {
						t.Error(err)
						return
					}
					p, err := d.Enter(a.Context())
					if err != nil {
						t.Error(err)
						return
					}
					if tc.acl {
						if err := d.Leave(a.Context(), p); !errors.Is(err, task.ErrNoAuth) {
							t.Errorf("Leave with its delete refused: %v, want task.ErrNoAuth", err)
						}
						// The ACL goes back a second later: the background
						// delete waits twice the session timeout to try again.
						if err := a.Sleep(a.Context(), time.Second); err != nil {
							t.Error(err)
						}
						if err := w.Server.AdminSetACL("/db", task.OpenACL); err != nil {
							t.Error(err)
						}
					} else {
						ended, cancel := context.WithCancel(a.Context())
						cancel()
						_ = d.Leave(ended, p) // its delete goes on in the background
					}
					p, err = d.Enter(a.Context())
					if err != nil {
						t.Error(err)
						return
					}
					if err := d.Leave(a.Context(), p); err != nil {
						t.Error(err)
					}
				})
				if !w.Settle(func() bool { return done }) {
					t.Fatal("stuck")
				}
				if twice := o.most > 1; twice != bug {
					t.Errorf("the session had %d participant nodes in %s at once (canary %v)", o.most, o.dir, bug)
				}
				if left := participantNodes(w, "/db"); len(left) > 0 {
					t.Errorf("participant nodes left: %v", left)
				}
			})
		})
	}
}

package sim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// LostReplies drops the connection after every create (rate 1) and counts
// the losses; Across runs a flow again after a session expiry; After waits
// on the simulated clock.
func TestHelpers(t *testing.T) {
	var cnt sim.Counts
	lost := &sim.LostReplies{Rate: 1, Counts: &cnt}
	var sent []task.Request
	lost.Sent = func(_ int, req task.Request) { sent = append(sent, req) }
	var created, waited, expired bool
	sc := sim.Scenario{
		Name:     "helpers",
		Clients:  1,
		Wrap:     lost.Wrap,
		Duration: 5 * time.Second,
		Live:     func(*sim.Trial) bool { return expired },
		Setup: func(r *sim.Trial) error {
			lost.World, lost.Rand = r.World, r.Rand
			return nil
		},
		Workload: func(r *sim.Trial) {
			sim.Across(r, r.Execs[0], task.Create("/x", nil, task.Persistent), &cnt, func(_ string, err error) {
				created = err == nil || errors.Is(err, task.ErrConnectionLoss)
			})
			start := r.Clock.Now()
			sim.After(r, r.Execs[0], 2*time.Second, func() {
				waited = r.Clock.Now().Sub(start) >= 2*time.Second
				r.Server.Expire(r.Conns[0])
				sim.Across(r, r.Execs[0], task.Sync("/"), &cnt, func(_ task.Unit, err error) {
					expired = err == nil
				})
			})
		},
	}
	res := sim.RunSeed(sc, 1, false)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if !created || !waited || !expired || cnt.Losses == 0 || cnt.Expiries == 0 || len(sent) == 0 {
		t.Fatalf("created %v waited %v after-expiry %v losses %d reruns %d sent %d", created, waited, expired, cnt.Losses, cnt.Expiries, len(sent))
	}
}

// LostReplies loses nothing while Setup runs (Setup runs with no fault),
// nor before World and Rand are set: a create in Setup succeeds at rate 1.
func TestLostRepliesNotInSetup(t *testing.T) {
	var cnt sim.Counts
	lost := &sim.LostReplies{Rate: 1, Counts: &cnt}
	var setupErr error
	sc := sim.Scenario{
		Name:     "helpers-setup",
		Clients:  1,
		Wrap:     lost.Wrap,
		Duration: time.Second,
		Live:     func(*sim.Trial) bool { return true },
		Setup: func(r *sim.Trial) error {
			// Before World and Rand are set: no panic, nothing lost.
			if _, err := sim.Run(r.World, 0, task.Create("/before", nil, task.Persistent)); err != nil {
				return err
			}
			lost.World, lost.Rand = r.World, r.Rand
			_, setupErr = sim.Run(r.World, 0, task.Create("/after", nil, task.Persistent))
			return setupErr
		},
	}
	if res := sim.RunSeed(sc, 1, false); res.Err != nil || setupErr != nil || cnt.Losses != 0 {
		t.Fatalf("setup: %v / %v, %d losses", res.Err, setupErr, cnt.Losses)
	}
}

// LostReplies with Deletes loses a delete's reply with the delete
// applied: the flow hears connection loss, the node is gone, and the
// client is cut off for a while before it reconnects.
func TestLostRepliesDeletes(t *testing.T) {
	var cnt sim.Counts
	lost := &sim.LostReplies{Deletes: 1, Counts: &cnt}
	var delErr error
	var deleted, reconnected bool
	sc := sim.Scenario{
		Name:     "helpers-deletes",
		Clients:  1,
		Wrap:     lost.Wrap,
		Duration: 5 * time.Second,
		Live:     func(*sim.Trial) bool { return reconnected },
		Setup: func(r *sim.Trial) error {
			lost.World, lost.Rand = r.World, r.Rand
			_, err := sim.Run(r.World, 0, task.Create("/x", nil, task.Persistent))
			return err
		},
		Workload: func(r *sim.Trial) {
			executor.Submit(r.Execs[0], task.Delete("/x", 0), func(_ task.Unit, err error) {
				delErr = err
				_, there := r.NodeStat("/x")
				deleted = !there
				sim.Across(r, r.Execs[0], task.Sync("/"), &cnt, func(_ task.Unit, err error) {
					reconnected = err == nil
				})
			})
		},
	}
	if res := sim.RunSeed(sc, 1, false); res.Err != nil {
		t.Fatal(res.Err)
	}
	if !errors.Is(delErr, task.ErrConnectionLoss) || !deleted || !reconnected || cnt.Losses == 0 {
		t.Fatalf("delete: %v (want connection loss), applied %v, reconnected %v, %d losses", delErr, deleted, reconnected, cnt.Losses)
	}
}

// Scenario.OwnDeletes passes a node deleted by its own session (by a
// delete, or by a multi that deletes it and makes the path again), by its
// session's end or by an operator (an operator client's process
// included), and fails the seed when another client's session deletes
// it, by a delete or by such a multi; judging "/d", the whole tree ("/"),
// with and without a root, or the node itself.
func TestOwnDeletes(t *testing.T) {
	replace := func(p string) task.Task[[]task.MultiResult] {
		return task.Multi(&task.DeleteRequest{Path: p, Version: task.AnyVersion},
			&task.CreateRequest{Path: p, Mode: task.Ephemeral, ACL: task.OpenACL})
	}
	type tcase struct {
		mode      string // own, foreign (client 1 deletes client 0's /d/c) or replaced (by a multi)
		own       string // Scenario.OwnDeletes
		root      string // Scenario.Root
		operators []int  // Scenario.OperatorClients
		fails     bool
	}
	var cases []tcase
	for k := range 12 {
		mode, own, root := []string{"own", "foreign", "replaced"}[k%3], []string{"/d", "/", "/d/c"}[k/3%3], ""
		if k >= 9 {
			own, root = "/", "/app"
		}
		cases = append(cases, tcase{mode: mode, own: own, root: root, fails: mode != "own"})
	}
	cases = append(cases,
		tcase{mode: "foreign", own: "/d", operators: []int{1}},
		tcase{mode: "replaced", own: "/d", operators: []int{1}},
		tcase{mode: "foreign", own: "/d", operators: []int{0}, fails: true},
	)
	for _, tc := range cases {
		mode := tc.mode
		done := false
		sc := judgedDir("own-deletes", &done)
		sc.Root, sc.OwnDeletes, sc.OperatorClients = tc.root, []string{tc.own}, tc.operators
		sc.Workload = func(r *sim.Trial) {
			mine := c.Seq(task.Create("/d/a", nil, task.Ephemeral), c.Seq(task.Create("/d/b", nil, task.Ephemeral),
				c.Seq(task.Create("/d/c", nil, task.Ephemeral), c.Seq(replace("/d/c"), task.Delete("/d/a", 0)))))
			executor.Submit(r.Execs[0], mine, func(_ task.Unit, err error) {
				if err != nil {
					r.Errorf("client 0: %v", err)
					return
				}
				if err := r.Server.AdminDelete(r.ServerPath("/d/b")); err != nil {
					r.Errorf("operator: %v", err)
					return
				}
				switch mode {
				case "own":
					r.Server.Expire(r.Conns[0]) // /d/c goes with its session
					done = true
				case "foreign":
					executor.Submit(r.Execs[1], task.Delete("/d/c", 0), func(_ task.Unit, err error) {
						done = err == nil
					})
				default:
					executor.Submit(r.Execs[1], replace("/d/c"), func(_ []task.MultiResult, err error) {
						done = err == nil
					})
				}
			})
		}
		res := sim.RunSeed(sc, 1, false)
		switch {
		case !tc.fails && res.Err != nil:
			t.Fatalf("%+v: own, operator's and session end's deletes: %v", tc, res.Err)
		case tc.fails && (res.Err == nil || !strings.Contains(res.Err.Error(), "deleted /d/c, an ephemeral node of session")):
			t.Fatalf("%+v: client 1's %s of client 0's node: %v, want the judge's violation", tc, mode, res.Err)
		}
	}
}

// judgedDir is a scenario of two clients whose Setup makes /d, live once
// *done, for the tests of the journal's judges.
func judgedDir(name string, done *bool) sim.Scenario {
	return sim.Scenario{
		Name:     name,
		Clients:  2,
		Duration: 5 * time.Second,
		Live:     func(*sim.Trial) bool { return *done },
		Setup: func(r *sim.Trial) error {
			_, err := sim.Run(r.World, 0, task.Create("/d", nil, task.Persistent))
			return err
		},
	}
}

// Scenario.OwnIncarnations passes a persistent node deleted by the
// process that made it (by a delete, or by a multi that deletes it and
// makes the path again), and fails the seed when another client's
// process deletes it, by a delete or by such a multi.
func TestOwnIncarnations(t *testing.T) {
	replace := func(p string) task.Task[[]task.MultiResult] {
		return task.Multi(&task.DeleteRequest{Path: p, Version: task.AnyVersion},
			&task.CreateRequest{Path: p, Mode: task.Persistent, ACL: task.OpenACL})
	}
	for _, mode := range []string{"own", "foreign", "replaced"} {
		done := false
		sc := judgedDir("own-incarnations", &done)
		sc.OwnIncarnations = []string{"/d"}
		sc.Workload = func(r *sim.Trial) {
			mine := c.Seq(task.Create("/d/p", nil, task.Persistent), replace("/d/p"))
			executor.Submit(r.Execs[0], mine, func(_ []task.MultiResult, err error) {
				if err != nil {
					r.Errorf("client 0: %v", err)
					return
				}
				var del task.Task[task.Unit]
				switch mode {
				case "own":
					executor.Submit(r.Execs[0], task.Delete("/d/p", -1), func(_ task.Unit, err error) { done = err == nil })
					return
				case "foreign":
					del = task.Delete("/d/p", -1)
				default:
					del = c.Map(replace("/d/p"), func([]task.MultiResult) task.Unit { return task.Unit{} })
				}
				executor.Submit(r.Execs[1], del, func(_ task.Unit, err error) { done = err == nil })
			})
		}
		res := sim.RunSeed(sc, 1, false)
		switch {
		case mode == "own" && res.Err != nil:
			t.Fatalf("own deletes: %v", res.Err)
		case mode != "own" && (res.Err == nil || !strings.Contains(res.Err.Error(), "deleted /d/p at zxid")):
			t.Fatalf("client 1's %s of client 0's node: %v, want the judge's violation", mode, res.Err)
		}
	}
}

// The journal's judges forget the tree a wipe lost: nodes made again at
// its paths on the new ensemble, by another client, are nobody's delete.
func TestOwnJudgesAcrossWipe(t *testing.T) {
	done := false
	sc := judgedDir("own-wipe", &done)
	sc.OwnDeletes, sc.OwnIncarnations = []string{"/d"}, []string{"/d"}
	sc.Workload = func(r *sim.Trial) {
		nodes := func() task.Task[string] {
			return c.Seq(task.Create("/d/e", nil, task.Ephemeral), task.Create("/d/p", nil, task.Persistent))
		}
		executor.Submit(r.Execs[0], nodes(), func(_ string, err error) {
			if err != nil {
				r.Errorf("client 0: %v", err)
				return
			}
			r.World.Wipe()
			var again func()
			again = func() {
				mk := c.OnError(task.Create("/d", nil, task.Persistent), func(error) task.Task[string] { return task.Value("/d") }, task.ErrNodeExists)
				executor.Submit(r.Execs[1], c.Seq(mk, nodes()), func(_ string, err error) {
					switch {
					case err == nil:
						done = true
					case errors.Is(err, task.ErrSessionExpired) || task.IsRetryable(err):
						sim.After(r, r.Execs[1], 100*time.Millisecond, again)
					default:
						r.Errorf("client 1: %v", err)
					}
				})
			}
			again()
		})
	}
	if res := sim.RunSeed(sc, 1, false); res.Err != nil {
		t.Fatalf("nodes made again after a wipe: %v", res.Err)
	}
}

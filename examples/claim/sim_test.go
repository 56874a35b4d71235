package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The recipe under the simulation: three clients claim one of two jobs,
// hold it a while and release it, in a loop, under every fault class but
// the operator's (who deletes a held node makes two owners
// legitimately), with creates' and deletes' replies often lost. Judged
// at each claim's answer: "mine" is backed by a node of the claimer's
// live session, "not mine" is not, and no job is claimed while another
// live session holds it.
func TestClaimUnderFaults(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 8
	}
	lost := 0
	if sim.Check(t, scenario(Claim, Release, 0.1, &lost), n).Failures() > 0 {
		return
	}
	t.Logf("%d seeds, %d replies lost", n, lost)
	if lost == 0 {
		t.Fatal("no reply was lost: the scenario checks nothing")
	}
}

// The two classic bugs, put in, are each caught within 100 seeds in each
// of two hunts (replies lost more often, for a short hunt).
func TestClaimCatchesBugs(t *testing.T) {
	theirsAfterLoss := func(f *task.F, job string, owner []byte) (bool, error) {
		for {
			_, err := task.Await(f, task.Create(job, owner, task.Ephemeral))
			if !errors.Is(err, task.ErrConnectionLoss) && !errors.Is(err, task.ErrNotSent) {
				return err == nil, ignoreExists(err) // NodeExists taken as someone else's
			}
		}
	}
	deleteByPath := func(f *task.F, job string) error {
		for {
			_, err := task.Await(f, task.Delete(job, -1)) // retried without reading
			if !errors.Is(err, task.ErrConnectionLoss) && !errors.Is(err, task.ErrNotSent) {
				return ignoreNoNode(err)
			}
		}
	}
	var lost int
	sim.Catch(t, scenario(theirsAfterLoss, Release, 0.4, &lost), "NodeExists after a lost reply taken as someone else's", 2, 100)
	sim.Catch(t, scenario(Claim, deleteByPath, 0.4, &lost), "a release retried by path", 2, 100)
}

// A release whose retry reads without a sync first, put in, is caught
// within 20,000 seeds in each of two hunts. It needs a delete applied
// whose reply a cut lost, and the session back through a member that has
// not applied it (a lag seed's draw): hunts found it at 1,520 and 4,489
// seeds, and at 9,498 and 809 once the blink class (fakezk/sim/blink.go)
// changed the histories of the seeds that draw it. A canary (make sim runs it, without the race detector).
func TestCanaryReadWithoutSync(t *testing.T) {
	readWithoutSync := func(f *task.F, job string) error {
		for {
			d, err := task.Await(f, task.Get(job)) // maybe from a member that has not applied our lost delete
			if errors.Is(err, task.ErrNoNode) || err == nil && d.Stat.EphemeralOwner != f.Scope().Session().ID {
				return nil
			}
			if err == nil {
				_, err = task.Await(f, task.Delete(job, d.Stat.Version))
				if err == nil || errors.Is(err, task.ErrNoNode) {
					return nil
				}
			}
			if !errors.Is(err, task.ErrConnectionLoss) && !errors.Is(err, task.ErrNotSent) {
				return err
			}
		}
	}
	var lost int
	sim.Catch(t, scenario(Claim, readWithoutSync, 0.4, &lost), "a release's retry read without a sync", 2, 20000)
}

func ignoreExists(err error) error {
	if errors.Is(err, task.ErrNodeExists) {
		return nil
	}
	return err
}

func ignoreNoNode(err error) error {
	if errors.Is(err, task.ErrNoNode) {
		return nil
	}
	return err
}

type holding struct {
	client int
	sess   int64
}

// scenario runs claim and release as described above; lossRate is the
// chance that a create's or a delete's reply is lost, and lost counts the
// lost replies.
func scenario(claim func(*task.F, string, []byte) (bool, error), release func(*task.F, string) error, lossRate float64, lost *int) sim.Scenario {
	jobs := []string{"/job-0", "/job-1"}
	var held map[string]holding
	var rnd *rand.Rand
	var world *sim.World
	judge := func(r *sim.Trial, i int, job string, mine bool, sess int64) {
		st, ok := r.NodeStat(job)
		live := func(s int64) bool { return slices.Contains(r.World.Server.Sessions(), s) }
		switch {
		case !mine && ok && st.EphemeralOwner == sess:
			r.Errorf("client %d: says %s is not its, but the node is its session's", i, job)
		case !mine || !live(sess): // a session that ended after the answer is no owner
		case !ok || st.EphemeralOwner != sess:
			r.Errorf("client %d: says %s is its, but the node is %v (owner %#x), not its session's %#x", i, job, ok, st.EphemeralOwner, sess)
		case held[job].sess != 0 && held[job].sess != sess && live(held[job].sess):
			r.Errorf("client %d claimed %s while client %d holds it on a live session", i, job, held[job].client)
		default:
			held[job] = holding{i, sess}
		}
	}
	round := func(r *sim.Trial, i int) task.Task[task.Unit] {
		return task.Flow(func(f *task.F) (task.Unit, error) {
			if _, err := task.Await(f, c.Sleep(time.Duration(r.Rand.Int64N(int64(50*time.Millisecond))))); err != nil {
				return task.Unit{}, err
			}
			job := jobs[r.Rand.IntN(len(jobs))]
			mine, err := claim(f, job, fmt.Appendf(nil, "client %d", i))
			if err != nil {
				return task.Unit{}, err
			}
			judge(r, i, job, mine, f.Scope().Session().ID)
			if !mine {
				return task.Unit{}, nil
			}
			_, err = task.Await(f, c.Sleep(time.Duration(r.Rand.Int64N(int64(200*time.Millisecond)))))
			if held[job].client == i {
				delete(held, job) // releasing: it no longer acts as owner
			}
			if err != nil {
				return task.Unit{}, err
			}
			return task.Unit{}, release(f, job)
		})
	}
	var loop func(r *sim.Trial, i int)
	loop = func(r *sim.Trial, i int) {
		if r.Stopping() || r.Closing() {
			return
		}
		executor.Submit(r.Execs[i], round(r, i), func(_ task.Unit, err error) {
			switch {
			case r.Closing():
				return
			case err == nil:
				r.Progress(i)
			case !errors.Is(err, task.ErrSessionExpired):
				r.Errorf("client %d: %v", i, err)
			}
			loop(r, i)
		})
	}
	return sim.Scenario{
		Name:     "claim",
		Clients:  3,
		Faults:   sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.Operator)},
		Duration: 5 * time.Second,
		Wrap: func(_ int, conn *fakezk.Conn) task.Conn {
			return &lossyConn{Conn: conn, lost: lost, sent: func() {
				if rnd.Float64() < lossRate {
					world.Server.Drop(conn, rnd.IntN(2) == 0)
				}
			}}
		},
		Setup: func(r *sim.Trial) error {
			held, rnd, world = map[string]holding{}, r.Rand, r.World
			return nil
		},
		Workload: func(r *sim.Trial) {
			for i := range r.Execs {
				loop(r, i)
			}
		},
		Restart: loop,
	}
}

// lossyConn calls sent just after it sends a create or a delete (which
// drops the connection, losing the reply, at the rate drawn), and counts
// the replies lost.
type lossyConn struct {
	*fakezk.Conn
	sent func()
	lost *int
}

func (lc *lossyConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	lc.Conn.Do(req, func(resp task.Response) {
		if errors.Is(resp.Err, task.ErrConnectionLoss) {
			*lc.lost++
		}
		done(resp)
	}, watch)
	switch req.(type) {
	case *task.CreateRequest, *task.DeleteRequest:
		lc.sent()
	}
}

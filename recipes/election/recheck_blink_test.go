package election_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// cutAfterRecheck: once armed, right after the reply to a plain exists of
// the candidate path has been handed to the client (its continuation not
// yet run), the connection is cut again (session kept, shorter than the
// give-up time).
type cutAfterRecheck struct {
	*fakezk.Conn
	w     *sim.World
	path  string
	armed bool
	cut   bool
	t0    time.Time
	sent  []string // when each plain exists of path was sent
}

func (c *cutAfterRecheck) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if r, ok := req.(*task.ExistsRequest); ok && watch == nil && c.armed && !c.cut && r.Path == c.path {
		inner := done
		done = func(resp task.Response) {
			inner(resp)
			if !c.cut {
				c.cut = true
				c.w.Server.Partition(c.Conn, c.w.Timeout()/10, false)
			}
		}
	}
	if r, ok := req.(*task.ExistsRequest); ok && watch == nil && r.Path == c.path {
		c.sent = append(c.sent, c.w.Clock.Now().Sub(c.t0).String())
	}
	c.Conn.Do(req, done, watch)
}

// Leadership doc: "on reconnect to the same session within GiveUp it
// leads again, after a read that finds its node still its own";
// leadership.go: "resume only once an exists read after the reconnect has
// seen the node". Schedule: client 0 leads; a short cut (under GiveUp);
// on the reconnect its recheck exists is answered (node ours) and the
// connection is cut again before the continuation runs; meanwhile an
// operator deletes its node and client 1 is granted. When client 0
// reconnected, the first recheck's continuation (its read made before the
// second suspension) set it Leading again, beside client 1 (canary
// election/recheck-any-read). A recheck now resumes only on a read made
// since the last suspension. The simulation's judge of acting leaders
// (sim.Leaders) excuses a leader whose node an operator deleted (judged by
// its fenced writes, which the server refuses), and the stale Leading
// ends at the instant it began, with the deletion's event. The
// simulation's blink and operator-in-cut classes (fakezk/sim/blink.go)
// make this schedule: TestCanariesExplore hunts the canary.
func TestRecheckReadBeforeASecondSuspension(t *testing.T) {
	canarytest.Both(t, "election/recheck-any-read", recheckReadBeforeASecondSuspension)
}

func recheckReadBeforeASecondSuspension(t *testing.T, bug bool) {
	var cut *cutAfterRecheck
	w, err := sim.New(sim.Config{Seed: 1, Clients: 3, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			cut = &cutAfterRecheck{Conn: conn}
			return cut
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	cut.w = w
	var l1 *election.Leadership
	var log []string
	var bad []string
	l0, err := mustRun(t, w, 0, mustElection(t, "/svc/el", election.WithOnState(func(l *election.Leadership, s election.State) {
		log = append(log, s.String())
		if s == election.Leading && l1 != nil && l1.IsLeader() {
			bad = append(bad, fmt.Sprintf("client 0 set Leading (token %d) while client 1 leads (token %d)", l.Token(), l1.Token()))
		}
	})).Campaign())
	if err != nil {
		t.Fatal(err)
	}
	cut.path = l0.Path()
	cut.armed = true
	cut.t0 = w.Clock.Now()
	w.Server.Partition(w.Conns[0], w.Timeout()/10, false)
	if !w.Settle(func() bool { return cut.cut }) {
		t.Fatalf("the recheck was never answered (states %v, err %v)", log, l0.Err())
	}
	if _, err := mustRun(t, w, 2, task.Delete(l0.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	l1, err = mustRun(t, w, 1, mustElection(t, "/svc/el").Campaign())
	if err != nil {
		t.Fatalf("client 1: %v", err)
	}
	t.Logf("deleted and client 1 granted by %s; client 0's rechecks sent at %v", w.Clock.Now().Sub(cut.t0), cut.sent)
	w.Settle(func() bool { return isClosed(l0.Done()) })
	t.Logf("client 0 states: %s; err %v; rechecks sent at %v", strings.Join(log, " "), l0.Err(), cut.sent)
	if (len(bad) > 0) != bug {
		t.Errorf("canary %v: %v", bug, bad)
	}
}

package election_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

func TestNewRejectsBadInput(t *testing.T) {
	for _, dir := range []string{"", "/", "rel", "/a/", "/a//b"} {
		if _, err := election.New(dir); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q) = %v, want ErrInvalidPath", dir, err)
		}
		if _, err := election.NewMaster(dir); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("NewMaster(%q) = %v, want ErrInvalidPath", dir, err)
		}
	}
	for _, g := range []float64{-0.1, 1, 2, math.NaN(), math.Inf(1)} {
		if _, err := election.New("/e", election.WithGiveUp(g)); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("GiveUp %v: %v, want ErrInvalidArgument", g, err)
		}
	}
	if _, err := election.New("/e", election.WithData(make([]byte, task.MaxDataSize+1))); !errors.Is(err, task.ErrDataTooLarge) {
		t.Errorf("huge Data: %v, want ErrDataTooLarge", err)
	}
	if _, err := election.NewMaster("/m", election.WithGiveUp(0.5), nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil option: %v, want ErrInvalidArgument", err)
	}
	e := mustElection(t, "/e")
	if _, err := election.NewClient(nil, "/e"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient with nil executor: %v", err)
	}
	if _, err := election.NewMasterClient(nil, "/m"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewMasterClient with nil executor: %v", err)
	}
	ex, err := executor.New(executor.Config{Conn: fakezk.New(fakezk.Config{}).Connect(fakezk.ConnConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	if _, err := election.NewClient(ex, "e"); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("NewClient with a bad path: %v", err)
	}
	// Leadership won by hand (Campaign run as a task) has no executor a
	// Client could block on.
	cl := election.ClientOf(ex, e)
	if err := cl.Resign(context.Background(), &election.Leadership{}); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Resign of leadership not won through a Client: %v", err)
	}
	if _, err := cl.Fenced(context.Background(), nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Fenced of nil leadership: %v", err)
	}
}

// Three candidates: the first leads; each resign hands leadership to the
// next in line only, woken by its predecessor's deletion alone, with a
// larger fencing token.
func TestSuccession(t *testing.T) {
	w, log := newWorld(t, 1, 3, fakezk.Config{})
	var cands [3]*election.Election
	for i := range cands {
		cands[i] = mustElection(t, "/app/election", election.WithData([]byte{'a' + byte(i)}))
	}
	l0, err := mustRun(t, w, 0, cands[0].Campaign())
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(l0.Path(), "/app/election/")
	if !strings.HasPrefix(name, "_c_") || !strings.HasSuffix(name, "-latch-0000000000") || len(name) != len("_c_")+36+len("-latch-0000000000") {
		t.Errorf("candidate name %q", name)
	}
	st, ok := w.Server.NodeStat(l0.Path())
	if !ok || st.EphemeralOwner != l0.Session().ID || st.Czxid != l0.Token() || !l0.IsLeader() || l0.State() != election.Leading {
		t.Fatalf("leader 0: node %v %+v, token %d, state %v", ok, st, l0.Token(), l0.State())
	}
	o1 := sim.Submit(w, 1, cands[1].Campaign())
	w.Settle(func() bool { return false }) // run everything there is
	o2 := sim.Submit(w, 2, cands[2].Campaign())
	w.Settle(func() bool { return false })
	if o1.Done || o2.Done {
		t.Fatalf("waiters ended while 0 leads: %v %v", o1.Err, o2.Err)
	}
	if who, err := mustRun(t, w, 2, cands[2].Leader()); err != nil || string(who) != "a" {
		t.Fatalf("Leader = %q, %v", who, err)
	}
	listsBefore := append([]int(nil), log.lists...)
	if _, err := mustRun(t, w, 0, l0.Resign()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o1.Done }) || o1.Err != nil {
		t.Fatalf("1 not elected: %v", o1.Err)
	}
	if o2.Done {
		t.Fatal("2 elected while 1 leads")
	}
	if !errors.Is(l0.Err(), election.ErrResigned) || !isClosed(l0.Done()) || l0.State() != election.Ended {
		t.Fatalf("resigned leadership: %v %v", l0.Err(), l0.State())
	}
	if got := log.wokenAt(l0.Path()); len(got) != 1 || !got[1] {
		t.Errorf("0's resign woke %v, want client 1 alone", got)
	}
	if log.lists[2] != listsBefore[2] {
		t.Errorf("client 2 listed the directory %d times on 0's resign", log.lists[2]-listsBefore[2])
	}
	l1 := o1.V
	if l1.Token() <= l0.Token() {
		t.Errorf("tokens %d then %d", l0.Token(), l1.Token())
	}
	if _, err := mustRun(t, w, 1, l1.Resign()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o2.Done }) || o2.Err != nil {
		t.Fatalf("2 not elected: %v", o2.Err)
	}
	if o2.V.Token() <= l1.Token() {
		t.Errorf("tokens %d then %d", l1.Token(), o2.V.Token())
	}
	if _, err := mustRun(t, w, 2, o2.V.Resign()); err != nil {
		t.Fatal(err)
	}
	if got := w.Children("/app/election"); len(got) != 0 {
		t.Fatalf("children after every resign: %v", got)
	}
	if _, err := mustRun(t, w, 0, cands[0].Leader()); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader with no candidates: %v", err)
	}
	noReportedErrors(t, w)
}

// stateLog records a leadership's state changes with the instant of each.
type stateLog struct {
	w      *sim.World
	states []election.State
	at     []time.Time
}

func (s *stateLog) opt() election.Option {
	return election.WithOnState(func(_ *election.Leadership, st election.State) {
		s.states = append(s.states, st)
		s.at = append(s.at, s.w.Clock.Now())
	})
}

// A partition longer than the session timeout: the leader is uncertain at
// once and gives up GiveUp (default a third) of the 4s timeout later, on
// the injected clock; the server expires the session only at 4s, and the
// next candidate is elected after that.
func TestGiveUpBeforeExpiry(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	sl := &stateLog{w: w}
	l0, err := mustRun(t, w, 0, mustElection(t, "/e", sl.opt()).Campaign())
	if err != nil {
		t.Fatal(err)
	}
	var granted time.Time
	e1 := mustElection(t, "/e", election.WithOnState(func(_ *election.Leadership, st election.State) {
		if st == election.Leading && granted.IsZero() {
			granted = w.Clock.Now()
		}
	}))
	o1 := sim.Submit(w, 1, e1.Campaign())
	w.Drive()
	cut := w.Clock.Now()
	w.Server.Partition(w.Conns[0], 10*time.Second, false)
	if !w.Settle(func() bool { return o1.Done }) || o1.Err != nil {
		t.Fatalf("1 not elected: %v", o1.Err)
	}
	timeout := l0.Session().Timeout
	if timeout != 4*time.Second {
		t.Fatalf("negotiated timeout %s", timeout)
	}
	want := []election.State{election.Leading, election.Uncertain, election.Ended}
	if len(sl.states) != 3 || sl.states[1] != want[1] || sl.states[2] != want[2] {
		t.Fatalf("states %v, want %v", sl.states, want)
	}
	if d := sl.at[1].Sub(cut); d != 0 {
		t.Errorf("uncertain %s after the cut, want at once", d)
	}
	if d := sl.at[2].Sub(cut); d != timeout/4 {
		t.Errorf("gave up %s after the cut, want %s", d, timeout/4)
	}
	if !errors.Is(l0.Err(), election.ErrLost) || !errors.Is(l0.Err(), election.ErrGaveUp) {
		t.Errorf("Err = %v", l0.Err())
	}
	if d := granted.Sub(cut); d < timeout {
		t.Errorf("next leader granted %s after the cut, before the %s expiry", d, timeout)
	}
	t.Logf("cut at 0, uncertain at %s, gave up at %s, next leader at %s", sl.at[1].Sub(cut), sl.at[2].Sub(cut), granted.Sub(cut))
}

// A disconnect shorter than the give-up time: uncertain, then leading
// again on the same session; the waiter stays waiting.
func TestShortDisconnectResumes(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	sl := &stateLog{w: w}
	l0, err := mustRun(t, w, 0, mustElection(t, "/e", sl.opt()).Campaign())
	if err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, mustElection(t, "/e").Campaign())
	w.Drive()
	w.Server.Partition(w.Conns[0], 900*time.Millisecond, true)
	w.Drive()
	if l0.State() != election.Uncertain || l0.IsLeader() {
		t.Fatalf("state during the partition: %v", l0.State())
	}
	w.Settle(func() bool { return l0.State() != election.Uncertain })
	w.Settle(func() bool { return false })
	if l0.State() != election.Leading || o1.Done {
		t.Fatalf("after the partition: %v (waiter done %v)", l0.State(), o1.Done)
	}
	if got := sl.at[2].Sub(sl.at[1]); got != 900*time.Millisecond {
		t.Errorf("uncertain for %s, want 900ms", got)
	}
	// Drops (applied or not) resume at once.
	for _, applied := range []bool{true, false} {
		w.Server.Drop(w.Conns[0], applied)
		w.Settle(func() bool { return false })
		if l0.State() != election.Leading || o1.Done {
			t.Fatalf("after a drop (applied %v): %v", applied, l0.State())
		}
	}
}

// Given up while the session lives on (a partition longer than GiveUp of
// the timeout but shorter than the timeout): on reconnect the node is
// deleted, so the next candidate need not wait for an expiry.
func TestGaveUpDeletesNodeOnReconnect(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	l0, err := mustRun(t, w, 0, mustElection(t, "/e", election.WithGiveUp(0.25)).Campaign())
	if err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, mustElection(t, "/e").Campaign())
	w.Drive()
	cut := w.Clock.Now()
	w.Server.Partition(w.Conns[0], 2*time.Second, false)
	if !w.Settle(func() bool { return o1.Done }) || o1.Err != nil {
		t.Fatalf("1 not elected: %v", o1.Err)
	}
	if !errors.Is(l0.Err(), election.ErrGaveUp) {
		t.Fatalf("Err = %v", l0.Err())
	}
	if d := w.Clock.Now().Sub(cut); d != 2*time.Second {
		t.Errorf("next leader %s after the cut, want at the reconnect (2s)", d)
	}
	if sess, _ := w.Execs[0].Current(); sess.ID != l0.Session().ID {
		t.Errorf("session changed: the test needs the same session")
	}
	noReportedErrors(t, w)
}

// Someone deletes the leader's node while the leader has not heard of it
// yet (its deliveries are delayed): its fenced write is refused by
// ZooKeeper, leadership is lost, and a later fenced write is refused
// without being sent.
func TestNodeDeletedIsLost(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	l0, err := mustRun(t, w, 0, mustElection(t, "/e").Campaign())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, l0.Fenced(&task.CreateRequest{Path: "/out", Data: []byte("1"), Mode: task.Persistent})); err != nil {
		t.Fatalf("fenced write while leading: %v", err)
	}
	w.Server.Delay(w.Conns[0], time.Second)
	if _, err := mustRun(t, w, 1, task.Delete(l0.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if l0.Err() != nil {
		t.Fatal("the leader heard of the delete through a delay")
	}
	_, err = mustRun(t, w, 0, l0.Fenced(&task.SetDataRequest{Path: "/out", Data: []byte("2"), Version: task.AnyVersion}))
	if !errors.Is(err, election.ErrLost) || !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("fenced write in flight at the loss: %v", err)
	}
	w.Drive()
	if !errors.Is(l0.Err(), election.ErrLost) || !isClosed(l0.Done()) || l0.IsLeader() {
		t.Fatalf("after the delete: %v", l0.Err())
	}
	_, err = mustRun(t, w, 0, l0.Fenced(&task.SetDataRequest{Path: "/out", Data: []byte("3"), Version: task.AnyVersion}))
	if !errors.Is(err, election.ErrLost) || errors.Is(err, task.ErrNoNode) {
		t.Fatalf("fenced write after the loss is known: %v", err)
	}
	if st, _ := w.Server.NodeStat("/out"); st.Version != 0 {
		t.Fatalf("/out written after the loss: %+v", st)
	}
}

// The session expires: leadership is lost (signalled), and the late
// fenced write of a leader that ignores it, sent on the next session, is
// refused by ZooKeeper.
func TestExpiryIsLostAndFenced(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	l0, err := mustRun(t, w, 0, mustElection(t, "/e").Campaign())
	if err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, mustElection(t, "/e").Campaign())
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return o1.Done && l0.State() == election.Ended }) || o1.Err != nil {
		t.Fatalf("after expiry: 1 done %v %v, 0 %v", o1.Done, o1.Err, l0.State())
	}
	if !errors.Is(l0.Err(), election.ErrLost) || !errors.Is(l0.Err(), task.ErrSessionExpired) {
		t.Fatalf("Err = %v", l0.Err())
	}
	_, err = mustRun(t, w, 0, l0.Fenced(&task.CreateRequest{Path: "/late", Mode: task.Persistent}))
	if !errors.Is(err, election.ErrLost) {
		t.Fatalf("late fenced write: %v", err)
	}
	if _, ok := w.Server.NodeStat("/late"); ok {
		t.Fatal("late fenced write applied")
	}
	if _, err := mustRun(t, w, 1, o1.V.Fenced(&task.CreateRequest{Path: "/late", Mode: task.Persistent})); err != nil {
		t.Fatalf("the new leader's fenced write: %v", err)
	}
}

// A campaign that ends by deadline or cancel leaves no candidate node,
// whatever the session does meanwhile.
func TestCampaignDeadlineLeavesNoOrphan(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	e := mustElection(t, "/e")
	l0, err := mustRun(t, w, 0, e.Campaign())
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustRun(t, w, 1, c.Timeout(e.Campaign(), 3*time.Second))
	if !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("campaign with a deadline: %v", err)
	}
	w.Settle(func() bool { return false })
	if got := w.Children("/e"); len(got) != 1 || "/e/"+got[0] != l0.Path() {
		t.Fatalf("children %v, want the leader's alone", got)
	}
	// Canceled while the connection is down: the cleanup waits for it.
	o := sim.Submit(w, 1, c.Timeout(e.Campaign(), time.Second))
	w.Drive()
	w.Server.Partition(w.Conns[1], 2*time.Second, true)
	w.Settle(func() bool { return o.Done })
	w.Settle(func() bool { return false })
	if !errors.Is(o.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("second campaign: %v", o.Err)
	}
	if got := w.Children("/e"); len(got) != 1 {
		t.Fatalf("children %v, want the leader's alone", got)
	}
	noReportedErrors(t, w)
}

// A create whose reply is lost to connection loss, applied or not, is
// settled by listing and checking the owner: one node, ours, and we lead.
func TestLostCreateReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		w, _ := newWorld(t, 1, 1, fakezk.Config{})
		e := mustElection(t, "/e")
		if _, err := mustRun(t, w, 0, task.Create("/e", nil, task.Persistent)); err != nil {
			t.Fatal(err)
		}
		o := sim.Submit(w, 0, e.Campaign())
		w.Execs[0].RunUntilIdle() // the create is in flight
		w.Server.Drop(w.Conns[0], applied)
		if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
			t.Fatalf("applied=%v: %v", applied, o.Err)
		}
		if got := w.Children("/e"); len(got) != 1 || "/e/"+got[0] != o.V.Path() {
			t.Fatalf("applied=%v: children %v, leader %s", applied, got, o.V.Path())
		}
	}
}

// A drop followed at once by a long partition: the second suspension
// comes before the recheck after the reconnect has confirmed the node, and
// must still arm the give-up timer (the simulation found this).
func TestSuspendAgainBeforeRecheck(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	sl := &stateLog{w: w}
	l0, err := mustRun(t, w, 0, mustElection(t, "/e", sl.opt()).Campaign())
	if err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, mustElection(t, "/e").Campaign())
	w.Drive()
	cut := w.Clock.Now()
	w.Server.Drop(w.Conns[0], true)
	w.Server.Partition(w.Conns[0], 10*time.Second, true)
	if !w.Settle(func() bool { return o1.Done }) || o1.Err != nil {
		t.Fatalf("1 not elected: %v", o1.Err)
	}
	if !errors.Is(l0.Err(), election.ErrGaveUp) {
		t.Fatalf("Err = %v", l0.Err())
	}
	if d := sl.at[len(sl.at)-1].Sub(cut); d != l0.Session().Timeout/4 {
		t.Errorf("gave up %s after the cut, want %s", d, l0.Session().Timeout/4)
	}
}

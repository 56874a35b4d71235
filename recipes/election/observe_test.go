package election_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// describe is an observation as the tests compare them.
func describe(ob election.Observation) string {
	if !ob.Leading {
		return "nobody"
	}
	return fmt.Sprintf("%s token=%d", ob.Data, ob.Token)
}

// An observer sees the leader at the start and each change of leader, in
// order: a resign, an expiry, the last resign (nobody), a new campaign;
// nothing for a candidate that joins behind the leader. Each observation
// names the leader's node and token as its Leadership has them.
func TestObserveElection(t *testing.T) {
	w, _ := newWorld(t, 1, 4, fakezk.Config{})
	const dir = "/app/election"
	var seen []string
	obs := mustElection(t, dir)
	if _, err := mustRun(t, w, 3, obs.Observe(nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Observe(nil) = %v, want ErrInvalidArgument", err)
	}
	o, err := mustRun(t, w, 3, obs.Observe(func(ob election.Observation) { seen = append(seen, describe(ob)) }))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	check := func(step string) {
		t.Helper()
		w.Settle(func() bool { return false })
		if strings.Join(seen, "; ") != strings.Join(want, "; ") {
			t.Fatalf("after %s: observed\n  %s\nwant\n  %s", step, strings.Join(seen, "; "), strings.Join(want, "; "))
		}
	}
	want = append(want, "nobody")
	check("the start")

	var ls [3]*election.Leadership
	cands := make([]*election.Election, 3)
	for i := range cands {
		cands[i] = mustElection(t, dir, election.WithData([]byte{'a' + byte(i)}))
	}
	if ls[0], err = mustRun(t, w, 0, cands[0].Campaign()); err != nil {
		t.Fatal(err)
	}
	want = append(want, fmt.Sprintf("a token=%d", ls[0].Token()))
	check("a's campaign")

	b := sim.Submit(w, 1, cands[1].Campaign())
	check("b queues behind a") // no change of leader
	sim.Submit(w, 2, cands[2].Campaign())
	check("c queues behind b")

	if _, err := mustRun(t, w, 0, ls[0].Resign()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return b.Done })
	if b.Err != nil {
		t.Fatal(b.Err)
	}
	want = append(want, fmt.Sprintf("b token=%d", b.V.Token()))
	check("a resigns")

	w.Server.Expire(w.Conns[1])
	w.Settle(func() bool { return false })
	kids := w.Children(dir)
	if len(kids) != 1 {
		t.Fatalf("candidates after b's expiry: %v", kids)
	}
	st, _ := w.NodeStat(dir + "/" + kids[0])
	want = append(want, fmt.Sprintf("c token=%d", st.Czxid))
	check("b's session expires")

	lc, ok := o.Latest()
	if !ok || describe(lc) != want[len(want)-1] || lc.Session != st.EphemeralOwner || lc.Path != dir+"/"+kids[0] {
		t.Fatalf("Latest = %+v, %v", lc, ok)
	}
	// The last leader gone: nobody leads until a campaign.
	w.Server.Expire(w.Conns[2])
	want = append(want, "nobody")
	check("c's session expires")
	l3, err := mustRun(t, w, 0, cands[0].Campaign())
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, fmt.Sprintf("a token=%d", l3.Token()))
	check("a campaigns again")
	if _, err := mustRun(t, w, 3, o.Stop()); err != nil {
		t.Fatal(err)
	}
	if !isClosed(o.Done()) || !errors.Is(o.Err(), election.ErrObserverStopped) {
		t.Fatalf("after Stop: done %v, err %v", isClosed(o.Done()), o.Err())
	}
}

// A Master's observer sees the master node: nobody, the first master,
// nobody between its delete and the next master's create, the next
// master, nobody after the last master's expiry.
func TestObserveMaster(t *testing.T) {
	w, _ := newWorld(t, 1, 3, fakezk.Config{})
	const path = "/app/master"
	var seen, want []string
	o, err := mustRun(t, w, 2, mustMaster(t, path, "").Observe(func(ob election.Observation) { seen = append(seen, describe(ob)) }))
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		w.Settle(func() bool { return false })
		if strings.Join(seen, "; ") != strings.Join(want, "; ") {
			t.Fatalf("after %s: observed\n  %s\nwant\n  %s", step, strings.Join(seen, "; "), strings.Join(want, "; "))
		}
	}
	want = append(want, "nobody")
	check("the start")
	l0, err := mustRun(t, w, 0, mustMaster(t, path, "a").Campaign())
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, fmt.Sprintf("a token=%d", l0.Token()))
	check("a's campaign")
	b := sim.Submit(w, 1, mustMaster(t, path, "b").Campaign())
	check("b waits")
	if _, err := mustRun(t, w, 0, l0.Resign()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return b.Done })
	if b.Err != nil {
		t.Fatal(b.Err)
	}
	// Between a's delete and b's create nobody leads: the observer sees
	// that too.
	want = append(want, "nobody", fmt.Sprintf("b token=%d", b.V.Token()))
	check("a resigns")
	w.Server.Expire(w.Conns[1])
	want = append(want, "nobody")
	check("b's session expires")
	if _, err := mustRun(t, w, 2, o.Stop()); err != nil {
		t.Fatal(err)
	}
}

// The blocking Observe sends who leads on a channel that keeps the latest
// observation, and closes it when its context ends; Lead runs the leader
// function with a context canceled when the leadership ends, gives the
// leadership up when the function returns and, with Requeue, campaigns
// again.
func TestBlockingObserveAndLead(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	var conns []*fakezk.Conn
	var exs []*executor.Executor
	for i := range 3 {
		conn := srv.Connect(fakezk.ConnConfig{})
		ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: uint64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = ex.Run(context.Background()) }()
		defer func() { ex.Close(); <-done }()
		conns, exs = append(conns, conn), append(exs, ex)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const dir = "/app/lead"
	e := mustElection(t, dir, election.WithData([]byte("x")))
	if _, err := election.ClientOf(nil, e).Observe(ctx); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Observe with nil executor: %v", err)
	}
	if err := election.ClientOf(exs[0], e).Lead(ctx, election.LeadOptions{}, nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Lead with nil function: %v", err)
	}
	octx, ocancel := context.WithCancel(ctx)
	obs, err := election.ClientOf(exs[2], e).Observe(octx)
	if err != nil {
		t.Fatal(err)
	}
	if ob := <-obs; ob.Leading {
		t.Fatalf("first observation %+v, want nobody", ob)
	}

	// One leadership without Requeue: Lead returns nil after lead does,
	// and the node is gone.
	var tokens []int64
	err = election.ClientOf(exs[0], e).Lead(ctx, election.LeadOptions{}, func(lctx context.Context, l *election.Leadership) error {
		tokens = append(tokens, l.Token())
		for ob := range obs {
			if ob.Leading && ob.Token == l.Token() {
				return nil // the observer saw this leadership
			}
		}
		return errors.New("observer channel closed")
	})
	if err != nil || len(tokens) != 1 {
		t.Fatalf("Lead = %v after %d leaderships", err, len(tokens))
	}
	if ob := <-obs; ob.Leading {
		t.Fatalf("after Lead returned: %+v, want nobody (the node is deleted)", ob)
	}

	// With Requeue: the leadership lost to an expiry cancels lead's
	// context; the candidate campaigns again on its new session.
	lost := errors.New("lead's context canceled")
	rounds := 0
	err = election.ClientOf(exs[1], e).Lead(ctx, election.LeadOptions{Requeue: true}, func(lctx context.Context, l *election.Leadership) error {
		rounds++
		if rounds == 1 {
			srv.Expire(conns[1])
			<-lctx.Done()
			if !errors.Is(l.Err(), election.ErrLost) {
				return fmt.Errorf("leadership ended with %v, want ErrLost", l.Err())
			}
			return nil
		}
		return lost
	})
	if !errors.Is(err, lost) || rounds != 2 {
		t.Fatalf("Lead with Requeue = %v after %d rounds, want the second round's error", err, rounds)
	}
	ocancel()
	for range obs { // closed once its context ended
	}
}

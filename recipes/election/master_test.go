package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

func mustMaster(tb testing.TB, path string, data string) *election.Master {
	tb.Helper()
	m, err := election.NewMaster(path, election.WithData([]byte(data)))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// The first create wins; the other waits on the node and takes over when
// it goes; Leader reports the data.
func TestMasterSuccession(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	l0, err := mustRun(t, w, 0, mustMaster(t, "/svc/master", "zero").Campaign())
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := w.Server.NodeStat("/svc/master"); !ok || st.EphemeralOwner != l0.Session().ID || st.Czxid != l0.Token() {
		t.Fatalf("master node %v %+v", ok, st)
	}
	m1 := mustMaster(t, "/svc/master", "one")
	o1 := sim.Submit(w, 1, m1.Campaign())
	w.Settle(func() bool { return false })
	if o1.Done {
		t.Fatalf("second master: %v", o1.Err)
	}
	if who, err := mustRun(t, w, 1, m1.Leader()); err != nil || string(who) != "zero" {
		t.Fatalf("Leader = %q %v", who, err)
	}
	if _, err := mustRun(t, w, 0, l0.Resign()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o1.Done }) || o1.Err != nil {
		t.Fatalf("second master: %v", o1.Err)
	}
	if o1.V.Token() <= l0.Token() {
		t.Errorf("tokens %d then %d", l0.Token(), o1.V.Token())
	}
	if _, err := mustRun(t, w, 1, o1.V.Resign()); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, m1.Leader()); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader without a master: %v", err)
	}
}

// A create whose reply is lost: applied, the node is ours (owner check)
// and we lead; not applied while someone else is master, we wait.
func TestMasterLostCreateReply(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	if _, err := mustRun(t, w, 0, task.Create("/svc", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, mustMaster(t, "/svc/master", "zero").Campaign())
	w.Execs[0].RunUntilIdle()
	w.Server.Drop(w.Conns[0], true)
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("applied: %v", o.Err)
	}
	o1 := sim.Submit(w, 1, mustMaster(t, "/svc/master", "one").Campaign())
	w.Execs[1].RunUntilIdle()
	w.Server.Drop(w.Conns[1], false)
	w.Settle(func() bool { return false })
	if o1.Done {
		t.Fatalf("not applied, node taken: campaign ended with %v", o1.Err)
	}
	if !o.V.IsLeader() {
		t.Fatal("first master no longer leads")
	}
}

// A campaign whose context ends leaves no master node of its own, and the
// blocking API reports the context's error.
func TestMasterBlockingCancel(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	exs, stop := clients(srv, 2)
	defer stop()
	ctx := context.Background()
	l0, err := election.ClientOf(exs[0], mustMaster(t, "/svc/master", "zero")).Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := election.ClientOf(exs[1], mustMaster(t, "/svc/master", "one")).Campaign(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("campaign past its context: %v", err)
	}
	if err := election.ClientOf(exs[0], nil).Resign(ctx, l0); err != nil {
		t.Fatal(err)
	}
	if _, err := election.ClientOf(exs[1], mustMaster(t, "/svc/master", "one")).Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("after step down: %v", err)
	}
}

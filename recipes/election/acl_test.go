package election_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/task"
)

// Every node an election creates carries the ACL its Config.ACL provider
// gives for the node's path: an Election's directory and ancestors and its
// candidates' nodes (a leader's and a waiter's); a Master's lease
// directory and ancestors, and the master node and lease created in one
// multi, by the first master and by its successor; and, with the option
// left out, none does (acltest.Check).
func TestACL(t *testing.T) {
	want := []string{"/acl", "/acl/e", "/acl/e/x", "/acl/e/x/_c_*", "/acl/svc", "/acl/svc/master" + election.LeasesSuffix,
		"/acl/svc/master", "/acl/svc/master" + election.LeasesSuffix + "/*"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		cfg := []election.Option{election.WithData([]byte("x")), election.WithACL(acl)}
		e, err := election.New("/acl/e/x", cfg...)
		if err != nil {
			t.Fatal(err)
		}
		m, err := election.NewMaster("/acl/svc/master", cfg...)
		if err != nil {
			t.Fatal(err)
		}
		for _, cand := range []election.Candidate{e, m} {
			l0, err := mustRun(t, w, 0, cand.Campaign())
			if err != nil {
				t.Fatal(err)
			}
			next := sim.Submit(w, 1, cand.Campaign())
			w.Drive()
			if _, err := mustRun(t, w, 0, l0.Resign()); err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool { return next.Done }) || next.Err != nil {
				t.Fatalf("successor: %+v", next)
			}
			if _, err := mustRun(t, w, 1, next.V.Resign()); err != nil {
				t.Fatal(err)
			}
		}
		multi := 0
		for _, c := range creates() {
			if c.InMulti && c.Path == m.Path() {
				multi++
			}
		}
		if multi < 2 {
			t.Fatalf("master node created in %d multis, want 2 (two masters)", multi)
		}
		return creates()
	})
}

// A Master whose candidates may create and delete leases but not write
// the lease directory's data (its campaign moves that version) fails its
// campaign with ErrNoAuth: it does not list and try again for ever.
func TestMasterLeaseDirectoryNotWritable(t *testing.T) {
	w, _ := newWorld(t, 1, 1, fakezk.Config{})
	noWrite := []task.ACL{{Perms: task.PermAll &^ task.PermWrite, Scheme: "world", ID: "anyone"}}
	m, err := election.NewMaster("/svc/master", election.WithACL(func(p string) []task.ACL {
		if p == "/svc/master"+election.LeasesSuffix {
			return noWrite
		}
		return task.OpenACL
	}))
	if err != nil {
		t.Fatal(err)
	}
	l, err := mustRun(t, w, 0, m.Campaign())
	if !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("campaign: %v, %v; want ErrNoAuth", l, err)
	}
	if _, ok := w.Server.NodeStat("/svc/master"); ok {
		t.Fatal("the master node is there after the failed campaign")
	}
}

// A candidate behind a node it may not READ fails its campaign with
// ErrNoAuth at once (WithACL's doc): ZooKeeper would never tell it of
// that node's delete, so waiting there would be waiting for ever. The
// check fails on the code that watched the predecessor with exists
// alone: the campaign then never ended.
func TestCampaignBehindAnUnreadableCandidate(t *testing.T) {
	w, _ := newWorld(t, 1, 2, fakezk.Config{})
	unreadable := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
	first, err := election.New("/svc/e", election.WithACL(func(p string) []task.ACL {
		if p == "/svc/e" || p == "/svc" {
			return task.OpenACL
		}
		return unreadable
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, first.Campaign()); err != nil {
		t.Fatal(err)
	}
	second, err := election.New("/svc/e")
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Submit(w, 0, second.Campaign())
	if !w.Settle(func() bool { return o.Done }) {
		t.Fatal("a campaign behind a candidate it may not read never ended")
	}
	if !errors.Is(o.Err, task.ErrNoAuth) {
		t.Fatalf("campaign: %v; want ErrNoAuth", o.Err)
	}
	if kids := w.Children("/svc/e"); len(kids) != 1 {
		t.Fatalf("after the failed campaign the directory holds %v, want the first candidate's node alone", kids)
	}
}

// Resign's doc: "A candidate's delete an ACL refuses (an operator closed
// the directory) fails with task.ErrNoAuth and is sent again in the
// background ... until the ACL lets it". The leader's directory is made
// read only; Resign fails with ErrNoAuth at once; the candidate behind
// waits; once the directory opens, the leader's node goes within twice
// the session timeout and the other candidate leads. On the code before,
// the node stayed until the leader's session ended (election/blocking
// seed 2 with the acl fault class).
func TestResignRefusedByACLGoesOnceTheDirectoryOpens(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e := mustElection(t, "/acl/el")
	l, err := mustRun(t, w, 0, e.Campaign())
	if err != nil {
		t.Fatal(err)
	}
	next := sim.Submit(w, 1, e.Campaign())
	w.Drive()
	readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL("/acl/el", readOnly); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 0, l.Resign()); !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("Resign under a closed directory = %v, want ErrNoAuth at once", err)
	}
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return next.Done || !w.Clock.Now().Before(until) })
	if next.Done {
		t.Fatalf("the next candidate ended while the leader's node could not be deleted: %v", next.Err)
	}
	if err := w.Server.AdminSetACL("/acl/el", task.OpenACL); err != nil {
		t.Fatal(err)
	}
	opened := w.Clock.Now()
	w.Settle(func() bool { return next.Done || w.Clock.Now().Sub(opened) > 3*w.Timeout() })
	if !next.Done || next.Err != nil {
		t.Fatalf("the next candidate after the directory opened: done=%v err=%v", next.Done, next.Err)
	}
	if took := w.Clock.Now().Sub(opened); took > 2*w.Timeout() {
		t.Fatalf("the next candidate led %s after the directory opened, want within twice the session timeout", took)
	}
}

// A Master campaign whose multi made the master node, and then failed
// before it could lead: an operator replaced its lease (so the lease no
// longer vouches for the node) and closed the lease directory, so its
// check for a sibling campaign's lease was refused. The campaign's
// cleanup used to delete the lease alone and leave the master node, of
// a session that lives on: every later campaign, this session's own
// included, waited for it until the session ended. The cleanup now
// deletes a node of its session that no lease of its session vouches
// for, and, refused, goes on until the ACL lets it.
func TestMasterCampaignCleanupRefusedDeletesItsNode(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, RecheckWatches: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const path = "/m"
	m0, m1 := mustMaster(t, path, "0"), mustMaster(t, path, "1")
	if _, err := sim.Run(w, 1, task.Create("/other", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	camp := sim.Submit(w, 0, m0.Campaign())
	// Run until the campaign's multi is applied, its reply not yet read.
	for i := 0; ; i++ {
		w.Execs[0].RunUntilIdle()
		if _, _, ok := w.NodeData(path); ok {
			break
		}
		if !w.Server.Step() && i > 1000 {
			t.Fatal("the campaign's multi was never applied")
		}
	}
	leases := w.Children(path + ".leases")
	if len(leases) != 1 {
		t.Fatalf("leases %v, want the campaign's", leases)
	}
	lease := path + ".leases/" + leases[0]
	if err := w.Server.AdminDelete(lease); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate(lease, []byte("operator"), w.Conns[1].SessionID()); err != nil {
		t.Fatal(err)
	}
	old, _ := w.Server.NodeACL(path + ".leases")
	if err := w.Server.AdminSetACL(path+".leases", []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return camp.Done })
	if !camp.Done || !errors.Is(camp.Err, task.ErrNoAuth) {
		t.Fatalf("the campaign: done=%v err=%v, want ErrNoAuth", camp.Done, camp.Err)
	}
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if err := w.Server.AdminSetACL(path+".leases", old); err != nil {
		t.Fatal(err)
	}
	opened := w.Clock.Now()
	w.Settle(func() bool {
		_, _, ok := w.NodeData(path)
		return !ok || w.Clock.Now().Sub(opened) > 3*w.Timeout()
	})
	if _, _, ok := w.NodeData(path); ok || w.Clock.Now().Sub(opened) > 2*w.Timeout() {
		t.Fatalf("the failed campaign's master node still there %s after the ACL was put back (want gone within twice the session timeout)", w.Clock.Now().Sub(opened))
	}
	next := sim.Submit(w, 1, m1.Campaign())
	w.Settle(func() bool { return next.Done || w.Clock.Now().Sub(opened) > 6*w.Timeout() })
	if !next.Done || next.Err != nil {
		t.Fatalf("the next campaign: done=%v err=%v, want it to lead", next.Done, next.Err)
	}
}

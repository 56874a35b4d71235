package idpersist_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// Every node a replica creates carries the ACL its Config.ACL provider
// gives for the node's path: the ancestors of the configured nodes, its
// candidate, the sequence node (restored from the mark when missing) and
// the limit node, each made in a fenced multi; with Parent, the limit
// of a sequence added under it, and Parent itself created again after
// it was deleted; and, with the option left out, none does
// (acltest.Check). The one sequence under Parent is the test's own
// create, with the provider's ACL too.
func TestACL(t *testing.T) {
	want := []string{"/acl", "/acl/ids", "/acl/ids/election", "/acl/ids/election/*", "/acl/ids/seq", "/acl/ids/limit",
		"/acl/dyn", "/acl/lims", "/acl/dynelect", "/acl/lims/a"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 3, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		run := func(i int, tk task.Task[task.Unit]) {
			t.Helper()
			if _, err := sim.Run(w, i, tk); err != nil {
				t.Fatal(err)
			}
		}

		// One sequence: the leader makes both nodes, a generator draws.
		cfg := idpersist.Config{Sequence: "/acl/ids/seq", Limit: "/acl/ids/limit", Election: "/acl/ids/election",
			Store: newFileStore(t), Chunk: 10, ACL: acl}
		r, err := idpersist.NewReplica(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sim.Submit(w, 0, r.Run())
		if id, err := sim.Run(w, 1, idpersist.Next(cfg)); err != nil || id != 1 {
			t.Fatalf("Next = %d, %v", id, err)
		}

		// Sequences under Parent: one added, then Parent deleted and made
		// again by the leader.
		stores, err := idpersist.NewDirStores(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		dyn := idpersist.Config{Parent: "/acl/dyn", Limits: "/acl/lims", Election: "/acl/dynelect", Stores: stores, Chunk: 10, ACL: acl}
		rd, err := idpersist.NewReplica(dyn)
		if err != nil {
			t.Fatal(err)
		}
		sim.Submit(w, 2, rd.Run())
		if !w.Settle(rd.Leading) {
			t.Fatal("no leader under Parent")
		}
		run(1, combinators.Map(task.CreateWith(&task.CreateRequest{Path: "/acl/dyn/a", Data: seqid.Encode(0), ACL: acl.For("/acl/dyn/a")}),
			func(task.Created) task.Unit { return task.Unit{} }))
		if id, err := sim.Run(w, 1, idpersist.Next(dyn.Named("a"))); err != nil || id != 1 {
			t.Fatalf("Next(a) = %d, %v", id, err)
		}
		run(1, task.Delete("/acl/dyn/a", task.AnyVersion))
		live := func() bool {
			names, err := stores.Names()
			return err == nil && slices.Contains(names, "a")
		}
		if !w.Settle(func() bool { return !live() }) {
			t.Fatal("removed sequence still live")
		}
		run(1, task.Delete("/acl/dyn", task.AnyVersion))
		made := func() bool {
			n := 0
			for _, c := range creates() {
				if c.Path == "/acl/dyn" {
					n++
				}
			}
			return n >= 2
		}
		if !w.Settle(made) {
			t.Fatal("Parent not created again by the leader")
		}
		return creates()
	})
}

// A leader an operator's ACL deposes: its candidate node and the
// election directory closed, its fenced write is refused and Run ends
// with ErrDeposed; its withdrawal's listing of the directory is refused
// too. The withdrawal goes on in the background until the ACL lets it:
// the old candidate, whose session lives on, would otherwise stay the
// lowest and hold the election up, every replica waiting behind it,
// until the session ends.
func TestWithdrawRefusedByACLGoesOnceAllowed(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, RecheckWatches: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := idpersist.Config{Sequence: "/ids/seq", Limit: "/ids/limit", Election: "/ids/election",
		Store: newFileStore(t), Chunk: 10, LowWater: 3}
	r, err := idpersist.NewReplica(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := sim.Submit(w, 0, r.Run())
	if !w.Settle(r.Leading) {
		t.Fatal("no leader")
	}
	cands := w.Children("/ids/election")
	if len(cands) != 1 {
		t.Fatalf("candidates %v, want one", cands)
	}
	cand := "/ids/election/" + cands[0]
	closed := []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}
	oldCand, _ := w.Server.NodeACL(cand)
	oldDir, _ := w.Server.NodeACL("/ids/election")
	for _, p := range []string{cand, "/ids/election"} {
		if err := w.Server.AdminSetACL(p, closed); err != nil {
			t.Fatal(err)
		}
	}
	// Draw until the leader must raise the limit: its fenced write is
	// refused, and Run ends.
	for i := 0; i < 20 && !run.Done; i++ {
		if _, err := sim.Run(w, 1, idpersist.Next(cfg)); err != nil {
			break
		}
	}
	w.Settle(func() bool { return run.Done })
	if !run.Done || !errors.Is(run.Err, idpersist.ErrDeposed) {
		t.Fatalf("the leader whose fenced write an ACL refused: done=%v err=%v, want ErrDeposed", run.Done, run.Err)
	}
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if err := w.Server.AdminSetACL("/ids/election", oldDir); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminSetACL(cand, oldCand); err != nil {
		t.Fatal(err)
	}
	opened := w.Clock.Now()
	w.Settle(func() bool { return len(w.Children("/ids/election")) == 0 || w.Clock.Now().Sub(opened) > 3*w.Timeout() })
	if left, took := w.Children("/ids/election"), w.Clock.Now().Sub(opened); len(left) != 0 || took > 2*w.Timeout() {
		t.Fatalf("candidates %v %s after the ACL was put back, want the deposed leader's withdrawn within twice the session timeout", left, took)
	}
}

package seqid_test

import (
	"context"
	"testing"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// Next, Reserve, a Counter and an Allocator, each on a missing sequence
// node, create it with the ACL their WithACL provider gives for its path;
// with the option left out, none does (acltest.Check).
func TestACL(t *testing.T) {
	want := []string{"/acl-next", "/acl-reserve", "/acl-counter", "/acl-alloc"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		opt := seqid.WithACL(acl)
		ct, err := seqid.NewCounter("/acl-counter", opt)
		if err != nil {
			t.Fatal(err)
		}
		al, err := seqid.NewAllocator("/acl-alloc", 10, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, next := range []task.Task[int64]{
			seqid.Next("/acl-next", opt),
			combinators.Map(seqid.Reserve("/acl-reserve", 5, opt), func(b seqid.Block) int64 { return b.Last }),
			ct.Next(),
			al.Next(),
		} {
			if _, err := sim.Run(w, 0, next); err != nil {
				t.Fatal(err)
			}
		}
		return creates()
	})
}

// NewClient passes WithACL on, to its counter (block size 1) and to its
// block reservations.
func TestGeneratorACL(t *testing.T) {
	acltest.Check(t, []string{"/acl-one", "/acl-blocks"}, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		srv := fakezk.New(fakezk.Config{Async: true})
		t.Cleanup(func() { _ = srv.Close() })
		rec := acltest.Wrap(srv.Connect(fakezk.ConnConfig{}))
		ex := acltest.Running(t, executor.Config{Conn: rec, Clock: srv.Clock(), Seed: 1})
		for _, g := range []struct {
			path string
			size int64
		}{{"/acl-one", 1}, {"/acl-blocks", 10}} {
			gen, err := seqid.NewClient(ex, g.path, g.size, seqid.WithACL(acl))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := gen.Next(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Creates()
	})
}

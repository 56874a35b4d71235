package zkops_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Create, EnsurePath (every ancestor it makes) and CreateUnique (its node
// with the ACL of its request, the directory and ancestors it makes with
// the provider's) create each node with the provider's ACL for its path.
func TestACL(t *testing.T) {
	want := []string{"/a", "/a/b", "/a/b/c", "/n", "/u", "/u/v", "/u/v/_c_x-*"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := sim.Run(w, 0, zkops.EnsurePath("/a/b/c", acl)); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(w, 0, zkops.Create("/n", nil, task.Persistent, acl)); err != nil {
			t.Fatal(err)
		}
		req := &task.CreateRequest{Path: "/u/v/_c_x-", Mode: task.EphemeralSequential, ACL: acl.For("/u/v/_c_x-")}
		if _, err := sim.Run(w, 0, zkops.CreateUnique(req, "/u/v", acl, nil)); err != nil {
			t.Fatal(err)
		}
		return creates()
	})
}

package partition_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/acltest"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Every node a member creates carries the ACL its WithACL provider gives
// for the node's path: the set's directory and ancestors, the party
// directory and the member's party node, the locks directory, an item's
// lock directory and the lock node; and, with the option left out, none
// does (acltest.Check).
func TestACL(t *testing.T) {
	want := []string{"/acl", "/acl/p", "/acl/p/party", "/acl/p/party/*", "/acl/p/locks", "/acl/p/locks/x", "/acl/p/locks/x/*"}
	acltest.Check(t, want, func(t *testing.T, acl task.ACLProvider) []acltest.Create {
		wrap, creates := acltest.Recorders[*fakezk.Conn]()
		w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: wrap})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		p, err := partition.New("/acl/p", []string{"x"}, partition.WithStable(stable), partition.WithACL(acl))
		if err != nil {
			t.Fatal(err)
		}
		m, err := sim.Run(w, 0, p.Join("m0", nil))
		if err != nil {
			t.Fatal(err)
		}
		if !w.Settle(func() bool { return len(m.Held()) == 1 }) {
			t.Fatalf("the only member holds %v", m.Held())
		}
		if _, err := sim.Run(w, 0, m.Leave()); err != nil {
			t.Fatal(err)
		}
		return creates()
	})
}

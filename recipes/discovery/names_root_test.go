package discovery_test

import (
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
)

// Names: "lists the services registered under the base path". Under
// base "/" the root's children include ZooKeeper's own /zookeeper,
// which is no service: Register, Query and NewCache refuse the name
// (TestServiceInTheReservedTree). Names used to list it, so that a
// caller querying each name it lists got ErrInvalidPath.
func TestNamesUnderTheRootLeaveOutTheReservedTree(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/")
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "x"})); err != nil {
		t.Fatal(err)
	}
	names, err := sim.Run(w, 0, d.Names())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"web"}) {
		t.Fatalf("Names under / = %q, want [web]", names)
	}
	for _, n := range names {
		if _, err := sim.Run(w, 0, d.Query(n)); err != nil {
			t.Errorf("Query(%q), a name Names listed: %v", n, err)
		}
	}
}

package fakezk_test

import (
	"math"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// TestAdv7MultiSequentialCreatesPastMaxCversion: a multi with two
// sequential creates under a parent whose stored cversion is int32's
// maximum. PROTOCOL.md says "multi: ops see earlier ops" and "(A real
// server can [hand out a negative sequence number], if two creates are in
// its pipeline at once; the fake applies one request at a time.)". A
// multi puts both creates in ZooKeeper 3.8.0's pipeline at once, and
// deterministically: PrepRequestProcessor.pRequest2TxnCreate names each
// create from the parent's ChangeRecord (outstandingChanges), and the
// first create set that record's cversion to cversion+1, which wraps to
// int32's minimum; only DataTree.createNode refuses to lower the stored
// cversion. So the real server names them n-2147483647 and
// n--2147483648 and the multi succeeds; the fake names both from the
// live tree, where the first create left the cversion at the maximum, and
// rolls the multi back with NodeExists.
func TestAdv7MultiSequentialCreatesPastMaxCversion(t *testing.T) {
	srv, _, do := reapServer(t, fakezk.Config{})
	mustDo(t, do, &task.CreateRequest{Path: "/d", ACL: task.OpenACL})
	if err := srv.SetCounters("/d", 0, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	seq := func() task.MultiOp {
		return &task.CreateRequest{Path: "/d/n-", ACL: task.OpenACL, Mode: task.PersistentSequential}
	}
	r := do(&task.MultiRequest{Ops: []task.MultiOp{seq(), seq()}})
	if r.Err != nil {
		t.Fatalf("multi of two sequential creates at cversion max: %v (results %+v); ZooKeeper 3.8.0 names them /d/n-2147483647 and /d/n--2147483648", r.Err, r.Results)
	}
	if got := []string{r.Results[0].Path, r.Results[1].Path}; got[0] != "/d/n-2147483647" || got[1] != "/d/n--2147483648" {
		t.Fatalf("names %v, want [/d/n-2147483647 /d/n--2147483648]", got)
	}
}

// TestAdv7MultiCreateThenSequentialAtMaxCversion: the same cause with a
// plain create first. The doc sentence contradicted is PROTOCOL.md's
// "multi: ops see earlier ops": in ZooKeeper 3.8.0 the later op sees the
// earlier op's ChangeRecord (cversion int32's maximum + 1, wrapped to its
// minimum), so the sequential create is named n--2147483648; the fake
// reads the live tree's unchanged cversion and names it n-2147483647.
func TestAdv7MultiCreateThenSequentialAtMaxCversion(t *testing.T) {
	srv, _, do := reapServer(t, fakezk.Config{})
	mustDo(t, do, &task.CreateRequest{Path: "/d", ACL: task.OpenACL})
	if err := srv.SetCounters("/d", 0, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	r := do(&task.MultiRequest{Ops: []task.MultiOp{
		&task.CreateRequest{Path: "/d/plain", ACL: task.OpenACL},
		&task.CreateRequest{Path: "/d/n-", ACL: task.OpenACL, Mode: task.PersistentSequential},
	}})
	if r.Err != nil {
		t.Fatalf("multi: %v", r.Err)
	}
	if got := r.Results[1].Path; got != "/d/n--2147483648" {
		t.Fatalf("sequential create after a create in one multi at cversion max named %s; ZooKeeper 3.8.0 names it /d/n--2147483648", got)
	}
}

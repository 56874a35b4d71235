package conformance

import (
	"github.com/zkflow/zkflow/task"
)

func multi(e *Env, ops ...task.MultiOp) task.Response {
	return e.C.Do(&task.MultiRequest{Ops: ops})
}

func setOp(p string, v int32) *task.SetDataRequest {
	return &task.SetDataRequest{Path: p, Data: []byte("m"), Version: v}
}
func delOp(p string, v int32) *task.DeleteRequest  { return &task.DeleteRequest{Path: p, Version: v} }
func checkOp(p string, v int32) *task.CheckRequest { return &task.CheckRequest{Path: p, Version: v} }

// failedAt checks a failed multi's results: RolledBack before i, err at i,
// runtime inconsistency after.
func failedAt(e *Env, r task.Response, n, i int, err error) {
	e.T.Helper()
	e.Err(r.Err, err, "multi error")
	if len(r.Results) != n {
		e.T.Errorf("results %d, want %d", len(r.Results), n)
		return
	}
	for j, res := range r.Results {
		switch {
		case j < i:
			e.True(res.RolledBack && res.Err == nil, "op %d: %+v, want rolled back", j, res)
		case j == i:
			e.Err(res.Err, err, "failing op")
		default:
			e.Err(res.Err, task.ErrRuntimeInconsistency, "later op")
		}
	}
}

func multiCases() []Case {
	return []Case{
		{"multi/success-results", "a successful multi returns one result per op, with created names", func(e *Env) {
			r := multi(e, create(e.P("a"), task.Persistent), create(e.P("b-"), task.PersistentSequential))
			e.Err(r.Err, nil, "multi")
			e.Eq(len(r.Results), 2, "results")
			if len(r.Results) == 2 {
				e.Eq([2]string{r.Results[0].Path, r.Results[1].Path}, [2]string{e.P("a"), e.P("b-0000000001")}, "paths")
			}
		}},
		{"multi/all-applied", "a successful multi applies every op", func(e *Env) {
			e.Mk("x")
			r := multi(e, create(e.P("a"), task.Persistent), setOp(e.P("x"), 0), delOp(e.P("a"), 0))
			e.Err(r.Err, nil, "multi")
			e.True(!e.Exists(e.P("a")), "a exists")
			e.Eq(e.Stat(e.P("x")).Version, int32(1), "x version")
		}},
		{"multi/one-zxid", "all ops of a multi share one zxid", func(e *Env) {
			r := multi(e, create(e.P("a"), task.Persistent), create(e.P("b"), task.Persistent))
			e.Err(r.Err, nil, "multi")
			e.Eq(e.Stat(e.P("a")).Czxid, e.Stat(e.P("b")).Czxid, "czxids")
		}},
		{"multi/check-ok", "a check with the right version lets the multi through", func(e *Env) {
			e.Mk("a")
			e.Err(multi(e, checkOp(e.P("a"), 0), setOp(e.P("a"), 0)).Err, nil, "multi")
		}},
		{"multi/check-any", "a check with version -1 passes on an existing node", func(e *Env) {
			e.Mk("a")
			e.Err(multi(e, checkOp(e.P("a"), -1)).Err, nil, "multi")
		}},
		{"multi/check-bad-version", "a check with a wrong version fails the multi with BadVersion", func(e *Env) {
			e.Mk("a")
			r := multi(e, checkOp(e.P("a"), 3), create(e.P("b"), task.Persistent))
			failedAt(e, r, 2, 0, task.ErrBadVersion)
			e.True(!e.Exists(e.P("b")), "b created")
		}},
		{"multi/check-missing", "a check of a missing node fails with NoNode", func(e *Env) {
			failedAt(e, multi(e, checkOp(e.P("nope"), -1)), 1, 0, task.ErrNoNode)
		}},
		{"multi/fail-middle", "ops before the failing one are rolled back, ops after it get runtime inconsistency", func(e *Env) {
			r := multi(e, create(e.P("a"), task.Persistent), create(e.P("a"), task.Persistent), create(e.P("c"), task.Persistent))
			failedAt(e, r, 3, 1, task.ErrNodeExists)
			e.True(!e.Exists(e.P("a")), "a survived rollback")
		}},
		{"multi/fail-last", "a failing last op rolls back every earlier one", func(e *Env) {
			e.Mk("x")
			r := multi(e, setOp(e.P("x"), -1), create(e.P("a"), task.Persistent), delOp(e.P("nope"), -1))
			failedAt(e, r, 3, 2, task.ErrNoNode)
			e.Eq(e.Stat(e.P("x")).Version, int32(0), "x version after rollback")
		}},
		{"multi/fail-first", "a failing first op makes every later op a runtime inconsistency", func(e *Env) {
			r := multi(e, delOp(e.P("nope"), -1), create(e.P("a"), task.Persistent))
			failedAt(e, r, 2, 0, task.ErrNoNode)
		}},
		{"multi/sees-earlier-ops", "later ops see earlier ops: create a parent then its child", func(e *Env) {
			e.Err(multi(e, create(e.P("a"), task.Persistent), create(e.P("a/b"), task.Persistent)).Err, nil, "multi")
			e.True(e.Exists(e.P("a/b")), "child missing")
		}},
		{"multi/version-after-set", "a check after a set in the same multi sees the new version", func(e *Env) {
			e.Mk("a")
			e.Err(multi(e, setOp(e.P("a"), 0), checkOp(e.P("a"), 1)).Err, nil, "multi")
		}},
		{"multi/ephemeral-parent", "a child of an ephemeral created in the same multi fails with NoChildrenForEphemerals", func(e *Env) {
			r := multi(e, create(e.P("e"), task.Ephemeral), create(e.P("e/c"), task.Persistent))
			failedAt(e, r, 2, 1, task.ErrNoChildrenForEphemerals)
		}},
		{"multi/not-empty", "deleting a node with children in a multi fails with NotEmpty", func(e *Env) {
			e.Mk("a", "a/b")
			failedAt(e, multi(e, delOp(e.P("a"), -1)), 1, 0, task.ErrNotEmpty)
		}},
		{"multi/delete-children-then-parent", "deleting children then their parent in one multi succeeds", func(e *Env) {
			e.Mk("a", "a/b")
			e.Err(multi(e, delOp(e.P("a/b"), -1), delOp(e.P("a"), -1)).Err, nil, "multi")
			e.True(!e.Exists(e.P("a")), "a exists")
		}},
		{"multi/create-then-delete", "create and delete of the same node in one multi leave nothing", func(e *Env) {
			e.Err(multi(e, create(e.P("a"), task.Persistent), delOp(e.P("a"), 0)).Err, nil, "multi")
			e.True(!e.Exists(e.P("a")), "a exists")
		}},
		{"multi/empty", "an empty multi succeeds with no results", func(e *Env) {
			r := multi(e)
			e.Err(r.Err, nil, "multi")
			e.Eq(len(r.Results), 0, "results")
		}},
		{"multi/sequential-in-order", "sequential creates in one multi are numbered in op order", func(e *Env) {
			r := multi(e, create(e.P("n-"), task.PersistentSequential), create(e.P("n-"), task.PersistentSequential))
			e.Err(r.Err, nil, "multi")
			if len(r.Results) == 2 {
				e.Eq([2]string{r.Results[0].Path, r.Results[1].Path}, [2]string{e.P("n-0000000000"), e.P("n-0000000001")}, "names")
			}
		}},
		{"multi/failed-keeps-cversion", "a failed multi's creates do not advance the sequence", func(e *Env) {
			multi(e, create(e.P("n-"), task.PersistentSequential), checkOp(e.P("nope"), -1))
			name, _ := seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n-0000000000"), "name")
		}},
		{"multi/bad-version-set", "a set with a wrong version fails the multi with BadVersion", func(e *Env) {
			e.Mk("a")
			failedAt(e, multi(e, create(e.P("b"), task.Persistent), setOp(e.P("a"), 4)), 2, 1, task.ErrBadVersion)
		}},
		{"multi/invalid-path-client", "a multi with an invalid path is refused before sending", func(e *Env) {
			e.Err(multi(e, create("bad", task.Persistent)).Err, task.ErrInvalidPath, "multi")
		}},
		{"multi/failed-takes-zxid", "a failed multi takes one zxid", func(e *Env) {
			_, a := e.Create(e.P("a"), "", task.Persistent)
			multi(e, checkOp(e.P("nope"), -1), checkOp(e.P("nope2"), -1))
			_, b := e.Create(e.P("b"), "", task.Persistent)
			e.Eq(b.Czxid-a.Czxid, int64(2), "zxids")
		}},
	}
}

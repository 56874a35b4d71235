package conformance

import (
	"github.com/zkflow/zkflow/task"
)

func statCases() []Case {
	return []Case{
		{"stat/create-zxids-equal", "a new node's czxid, mzxid and pzxid are the creating zxid", func(e *Env) {
			_, st := e.Create(e.P("a"), "x", task.Persistent)
			e.True(st.Czxid > 0 && st.Mzxid == st.Czxid && st.Pzxid == st.Czxid, "zxids %+v", st)
		}},
		{"stat/create-counters-zero", "a new node has version, cversion, aversion and numChildren 0", func(e *Env) {
			_, st := e.Create(e.P("a"), "x", task.Persistent)
			e.Eq([4]int32{st.Version, st.Cversion, st.Aversion, st.NumChildren}, [4]int32{}, "counters")
		}},
		{"stat/create-times-equal", "a new node's ctime equals its mtime", func(e *Env) {
			_, st := e.Create(e.P("a"), "", task.Persistent)
			e.True(st.Ctime > 0 && st.Ctime == st.Mtime, "ctime %d mtime %d", st.Ctime, st.Mtime)
		}},
		{"stat/create-data-length", "dataLength is the data's length", func(e *Env) {
			_, st := e.Create(e.P("a"), "hello", task.Persistent)
			e.Eq(st.DataLength, int32(5), "dataLength")
		}},
		{"stat/create-persistent-owner-zero", "a persistent node's ephemeralOwner is 0", func(e *Env) {
			_, st := e.Create(e.P("a"), "", task.Persistent)
			e.Eq(st.EphemeralOwner, int64(0), "ephemeralOwner")
		}},
		{"stat/create-stat-matches-exists", "the Stat a create returns is the node's Stat", func(e *Env) {
			_, st := e.Create(e.P("a"), "abc", task.Persistent)
			e.Eq(e.Stat(e.P("a")), st, "exists stat")
		}},
		{"stat/reads-agree", "exists, getData and getChildren return the same Stat", func(e *Env) {
			e.Mk("a", "a/b")
			p := e.P("a")
			st := e.Stat(p)
			e.Eq(e.C.Do(&task.GetDataRequest{Path: p}).Stat, st, "get stat")
			e.Eq(e.C.Do(&task.GetChildrenRequest{Path: p}).Stat, st, "children stat")
		}},
		{"stat/get-returns-data", "getData returns the data written", func(e *Env) {
			e.Create(e.P("a"), "payload", task.Persistent)
			e.Eq(string(e.C.Do(&task.GetDataRequest{Path: e.P("a")}).Data), "payload", "data")
		}},
		{"stat/empty-data", "a node created without data has dataLength 0 and reads back empty", func(e *Env) {
			_, st := e.Create(e.P("a"), "", task.Persistent)
			e.Eq(st.DataLength, int32(0), "dataLength")
			e.Eq(len(e.C.Do(&task.GetDataRequest{Path: e.P("a")}).Data), 0, "data length")
		}},
		{"stat/set-bumps-version", "setData increments version by one", func(e *Env) {
			e.Mk("a")
			e.Eq(e.Set(e.P("a"), "1").Version, int32(1), "version after one set")
			e.Eq(e.Set(e.P("a"), "2").Version, int32(2), "version after two sets")
		}},
		{"stat/set-same-data-bumps-version", "setData with unchanged data still increments version", func(e *Env) {
			e.Create(e.P("a"), "x", task.Persistent)
			e.Eq(e.Set(e.P("a"), "x").Version, int32(1), "version")
		}},
		{"stat/set-mzxid", "setData moves mzxid past czxid and keeps czxid and pzxid", func(e *Env) {
			_, c := e.Create(e.P("a"), "", task.Persistent)
			st := e.Set(e.P("a"), "x")
			e.True(st.Mzxid > c.Czxid, "mzxid %d not after czxid %d", st.Mzxid, c.Czxid)
			e.Eq([2]int64{st.Czxid, st.Pzxid}, [2]int64{c.Czxid, c.Pzxid}, "czxid, pzxid")
		}},
		{"stat/set-keeps-cversion", "setData leaves cversion and numChildren alone", func(e *Env) {
			e.Mk("a", "a/b")
			before := e.Stat(e.P("a"))
			st := e.Set(e.P("a"), "x")
			e.Eq([2]int32{st.Cversion, st.NumChildren}, [2]int32{before.Cversion, before.NumChildren}, "cversion, numChildren")
		}},
		{"stat/set-mtime", "setData leaves ctime and does not move mtime backwards", func(e *Env) {
			_, c := e.Create(e.P("a"), "", task.Persistent)
			st := e.Set(e.P("a"), "x")
			e.True(st.Ctime == c.Ctime && st.Mtime >= c.Mtime, "times %+v after %+v", st, c)
		}},
		{"stat/set-data-length", "setData updates dataLength", func(e *Env) {
			e.Create(e.P("a"), "abc", task.Persistent)
			e.Eq(e.Set(e.P("a"), "abcdefg").DataLength, int32(7), "dataLength")
		}},
		{"stat/set-any-version", "setData with version -1 succeeds whatever the version", func(e *Env) {
			e.Mk("a")
			e.Set(e.P("a"), "1")
			r := e.C.Do(&task.SetDataRequest{Path: e.P("a"), Data: []byte("2"), Version: task.AnyVersion})
			e.Err(r.Err, nil, "set -1")
		}},
		{"stat/set-exact-version", "setData with the current version succeeds", func(e *Env) {
			e.Mk("a")
			r := e.C.Do(&task.SetDataRequest{Path: e.P("a"), Data: []byte("2"), Version: 0})
			e.Err(r.Err, nil, "set 0")
			e.Eq(r.Stat.Version, int32(1), "version")
		}},
		{"stat/child-create-parent", "creating a child increments the parent's cversion and numChildren and sets its pzxid to the child's czxid", func(e *Env) {
			before := e.Stat(e.Base)
			_, ch := e.Create(e.P("c"), "", task.Persistent)
			after := e.Stat(e.Base)
			e.Eq(after.Cversion, before.Cversion+1, "cversion")
			e.Eq(after.NumChildren, before.NumChildren+1, "numChildren")
			e.Eq(after.Pzxid, ch.Czxid, "pzxid")
		}},
		{"stat/child-create-parent-data-untouched", "creating a child leaves the parent's version and mzxid", func(e *Env) {
			before := e.Stat(e.Base)
			e.Mk("c")
			after := e.Stat(e.Base)
			e.Eq([2]int64{int64(after.Version), after.Mzxid}, [2]int64{int64(before.Version), before.Mzxid}, "version, mzxid")
		}},
		{"stat/child-delete-parent", "deleting a child increments the parent's cversion too (DataNode.copyStat reports 2*creates - numChildren) and moves its pzxid and numChildren", func(e *Env) {
			_, ch := e.Create(e.P("c"), "", task.Persistent)
			before := e.Stat(e.Base)
			e.Delete(e.P("c"))
			after := e.Stat(e.Base)
			e.Eq(after.Cversion, before.Cversion+1, "cversion")
			e.Eq(after.NumChildren, before.NumChildren-1, "numChildren")
			e.True(after.Pzxid > ch.Czxid, "pzxid %d not after child czxid %d", after.Pzxid, ch.Czxid)
		}},
		{"stat/cversion-counts-changes", "after n creates and m deletes of children the parent's cversion is n+m", func(e *Env) {
			e.Mk("a", "b", "c")
			e.Delete(e.P("a"))
			e.Delete(e.P("b"))
			e.Mk("d")
			e.Eq(e.Stat(e.Base).Cversion, int32(6), "cversion")
		}},
		{"stat/grandchild-not-counted", "a grandchild does not change the grandparent's cversion or numChildren", func(e *Env) {
			e.Mk("a")
			before := e.Stat(e.Base)
			e.Mk("a/b")
			after := e.Stat(e.Base)
			e.Eq([2]int32{after.Cversion, after.NumChildren}, [2]int32{before.Cversion, before.NumChildren}, "cversion, numChildren")
		}},
		{"stat/zxid-increases", "each write gets a larger zxid", func(e *Env) {
			_, a := e.Create(e.P("a"), "", task.Persistent)
			_, b := e.Create(e.P("b"), "", task.Persistent)
			e.True(b.Czxid > a.Czxid, "czxid %d then %d", a.Czxid, b.Czxid)
		}},
		{"stat/failed-write-takes-zxid", "a failed write is logged as an error txn and takes a zxid", func(e *Env) {
			_, a := e.Create(e.P("a"), "", task.Persistent)
			e.Err(e.C.Do(create(e.P("a"), task.Persistent)).Err, task.ErrNodeExists, "create again")
			_, b := e.Create(e.P("b"), "", task.Persistent)
			e.Eq(b.Czxid-a.Czxid, int64(2), "zxids between creates")
		}},
		{"stat/read-takes-no-zxid", "reads take no zxid", func(e *Env) {
			_, a := e.Create(e.P("a"), "", task.Persistent)
			e.Stat(e.P("a"))
			e.C.Do(&task.GetDataRequest{Path: e.P("a")})
			e.C.Do(&task.SyncRequest{Path: e.P("a")})
			_, b := e.Create(e.P("b"), "", task.Persistent)
			e.Eq(b.Czxid-a.Czxid, int64(1), "zxids between creates")
		}},
		{"stat/recreate-new-czxid", "a deleted and recreated node has a new czxid and version 0", func(e *Env) {
			e.Mk("a")
			old := e.Set(e.P("a"), "x")
			e.Delete(e.P("a"))
			_, st := e.Create(e.P("a"), "", task.Persistent)
			e.True(st.Czxid > old.Mzxid && st.Version == 0, "recreated %+v after %+v", st, old)
		}},
		{"stat/children-listed", "getChildren lists exactly the children, names only", func(e *Env) {
			e.Mk("a", "b", "c", "b/x")
			got := e.C.Do(&task.GetChildrenRequest{Path: e.Base}).Children
			e.Eq(sorted(got), []string{"a", "b", "c"}, "children")
		}},
		{"stat/children-empty", "getChildren of a leaf is empty", func(e *Env) {
			e.Mk("a")
			e.Eq(len(e.C.Do(&task.GetChildrenRequest{Path: e.P("a")}).Children), 0, "children")
		}},
		{"stat/container-owner", "a container node reports ephemeralOwner 0 (its stored owner marks EphemeralType.CONTAINER; copyStat shows only session owners)", func(e *Env) {
			_, st := e.Create(e.P("k"), "", task.Container)
			e.Eq(st.EphemeralOwner, int64(0), "ephemeralOwner")
			e.Eq(e.Stat(e.P("k")).EphemeralOwner, int64(0), "ephemeralOwner via exists")
		}},
		{"stat/container-keeps-children", "a container node may have children", func(e *Env) {
			e.Create(e.P("k"), "", task.Container)
			e.Mk("k/a")
			e.Eq(e.Stat(e.P("k")).NumChildren, int32(1), "numChildren")
		}},
		{"stat/version-wraps", "a data version at int32's maximum wraps to its minimum on the next set", func(e *Env) {
			cs := Need[CounterSetter](e)
			e.Mk("a")
			cs.SetCounters(e.T, e.P("a"), 1<<31-1, 0)
			e.Eq(e.Set(e.P("a"), "x").Version, int32(-1<<31), "version")
		}},
		{"stat/version-wraps-to-any", "a version that reaches -1 matches only as 'any': a set with -1 succeeds whatever the version", func(e *Env) {
			cs := Need[CounterSetter](e)
			e.Mk("a")
			cs.SetCounters(e.T, e.P("a"), -2, 0)
			st := e.Set(e.P("a"), "x")
			e.Eq(st.Version, int32(-1), "version")
			r := e.C.Do(&task.SetDataRequest{Path: e.P("a"), Version: 5})
			e.Err(r.Err, task.ErrBadVersion, "set 5")
		}},
	}
}

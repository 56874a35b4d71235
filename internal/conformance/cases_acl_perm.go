package conformance

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Which permission each operation needs, and on which node.
func aclPermissionCases() []Case {
	return []Case{
		{"acl/read-needed", "getData and getChildren need READ on the node", func(e *Env) {
			e.MkACL("a", "x", noRead)
			e.Err(e.C.Do(get(e.P("a"))).Err, task.ErrNoAuth, "get")
			e.Err(e.C.Do(&task.GetChildrenRequest{Path: e.P("a")}).Err, task.ErrNoAuth, "children")
			e.MkACL("b", "x", world(task.PermRead))
			r := e.C.Do(get(e.P("b")))
			e.Err(r.Err, nil, "get with READ only")
			e.Eq(string(r.Data), "x", "data")
			e.Err(e.C.Do(&task.GetChildrenRequest{Path: e.P("b")}).Err, nil, "children with READ only")
		}},
		{"acl/exists-needs-nothing", "exists and sync need no permission: a node nobody may read still shows its Stat", func(e *Env) {
			st := e.MkACL("a", "xyz", world(0))
			r := e.C.Do(&task.ExistsRequest{Path: e.P("a")})
			e.Err(r.Err, nil, "exists")
			e.Eq(r.Stat, st, "stat")
			e.Err(e.C.Do(&task.SyncRequest{Path: e.P("a")}).Err, nil, "sync")
		}},
		{"acl/write-needed", "setData needs WRITE on the node", func(e *Env) {
			e.MkACL("a", "", noWrite)
			e.Err(e.C.Do(set(e.P("a"))).Err, task.ErrNoAuth, "set")
			e.MkACL("b", "", world(task.PermWrite))
			e.Err(e.C.Do(set(e.P("b"))).Err, nil, "set with WRITE only")
		}},
		{"acl/create-needs-parent-create", "create needs CREATE on the parent; the new node's own ACL plays no part", func(e *Env) {
			e.MkACL("p", "", noCreate)
			e.Err(e.C.Do(create(e.P("p/c"), task.Persistent)).Err, task.ErrNoAuth, "create under a parent without CREATE")
			e.Err(e.C.Do(create(e.P("p/e"), task.Ephemeral)).Err, task.ErrNoAuth, "ephemeral too")
			e.MkACL("q", "", world(task.PermCreate))
			e.Err(e.C.Do(&task.CreateRequest{Path: e.P("q/c"), ACL: []task.ACL{world(0)}}).Err, nil, "create under a parent with CREATE only")
		}},
		{"acl/create-denied-keeps-cversion", "a create refused with NoAuth leaves the parent's cversion: the next sequential child is numbered 0", func(e *Env) {
			e.MkACL("p", "", noCreate)
			e.Err(e.C.Do(create(e.P("p/s-"), task.PersistentSequential)).Err, task.ErrNoAuth, "create")
			e.SetACL(e.C, e.P("p"), task.OpenACL...)
			r := e.C.Do(create(e.P("p/s-"), task.PersistentSequential))
			e.Err(r.Err, nil, "create")
			e.Eq(r.Path, e.P("p/s-0000000000"), "name")
		}},
		{"acl/delete-needs-parent-delete", "delete needs DELETE on the parent, whatever the node's own ACL", func(e *Env) {
			e.MkACL("p", "", noDelete)
			e.Create(e.P("p/c"), "", task.Persistent)
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("p/c"), Version: -1}).Err, task.ErrNoAuth, "delete under a parent without DELETE")
			e.True(e.Exists(e.P("p/c")), "node deleted")
			e.MkACL("z", "", world(0))
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("z"), Version: -1}).Err, nil, "delete of a node nobody may touch, under an open parent")
		}},
		{"acl/set-acl-needs-admin", "setACL needs ADMIN on the node", func(e *Env) {
			e.MkACL("a", "", noAdmin)
			e.Err(e.C.Do(setACL(e.P("a"), -1, task.OpenACL...)).Err, task.ErrNoAuth, "setACL")
			e.MkACL("b", "", world(task.PermAdmin))
			e.Err(e.C.Do(setACL(e.P("b"), -1, task.OpenACL...)).Err, nil, "setACL with ADMIN only")
		}},
		{"acl/set-acl-can-lock-out", "a session may set an ACL that leaves itself no permission; it then cannot set it back", func(e *Env) {
			e.Mk("a")
			e.SetACL(e.C, e.P("a"), world(task.PermRead))
			e.Err(e.C.Do(setACL(e.P("a"), -1, task.OpenACL...)).Err, task.ErrNoAuth, "setACL back")
		}},
		{"acl/get-acl-needs-read-or-admin", "getACL needs READ or ADMIN; neither is NoAuth", func(e *Env) {
			e.MkACL("a", "", world(task.PermAll&^(task.PermRead|task.PermAdmin)))
			e.Err(e.C.Do(&task.GetACLRequest{Path: e.P("a")}).Err, task.ErrNoAuth, "getACL")
			e.MkACL("r", "", world(task.PermRead))
			e.Eq(e.ACLOf(e.C, e.P("r")).ACL, []task.ACL{world(task.PermRead)}, "READ only")
			e.MkACL("d", "", world(task.PermAdmin))
			e.Eq(e.ACLOf(e.C, e.P("d")).ACL, []task.ACL{world(task.PermAdmin)}, "ADMIN only")
		}},
		{"acl/get-acl-redacts-digests", "getACL without ADMIN shows digest ids as user:x; with ADMIN in full", func(e *Env) {
			e.MkACL("a", "", world(task.PermRead), aliceACL(task.PermAll), ipACL(task.PermRead, "10.0.0.1"),
				task.ACL{Perms: task.PermRead, Scheme: "digest", ID: ":hash"})
			r := e.ACLOf(e.C, e.P("a"))
			e.Eq(r.ACL, []task.ACL{world(task.PermRead), {Perms: task.PermAll, Scheme: "digest", ID: "alice:x"},
				ipACL(task.PermRead, "10.0.0.1"), {Perms: task.PermRead, Scheme: "digest", ID: ":x"}}, "redacted")
			e.Eq(r.Stat, e.Stat(e.P("a")), "stat")
			e.MkACL("b", "", world(task.PermAdmin), aliceACL(task.PermRead))
			e.Eq(e.ACLOf(e.C, e.P("b")).ACL, []task.ACL{world(task.PermAdmin), aliceACL(task.PermRead)}, "with ADMIN")
		}},
		{"acl/id-as-java-string", "the server reads an ACL's ids as Java Strings and writes them back char by char: each ill-formed UTF-8 sequence is one U+FFFD, cut as the JDK's decoder cuts them, and a character above U+FFFF comes back as its two surrogates, three bytes each", func(e *Env) {
			for i, tc := range []struct{ in, out string }{
				{"\xff\xfe", "\ufffd\ufffd"},
				{"\xe2\x82z", "\ufffdz"},
				{"\xe0\x80\x80", "\ufffd\ufffd\ufffd"},
				{"\xed\xa0\x80z", "\ufffdz"},
				{"\xf0\x90\x80z", "\ufffdz"},
				{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
				{"\U0001F600", "\xed\xa0\xbd\xed\xb8\x80"},
			} {
				rel := fmt.Sprintf("n%d", i)
				p := e.P(rel)
				e.MkACL(rel, "", world(task.PermAll), task.ACL{Perms: task.PermRead, Scheme: "digest", ID: "u:h" + tc.in})
				e.Eq(e.ACLOf(e.C, p).ACL, []task.ACL{world(task.PermAll), {Perms: task.PermRead, Scheme: "digest", ID: "u:h" + tc.out}}, fmt.Sprintf("acl of id %q", tc.in))
			}
		}},
		{"acl/get-acl-redacts-each-line", "getACL without ADMIN redacts a digest id as id.replaceAll(\":.*\", \":x\") does: from each colon up to a line break (a valid id may have a second colon, at its end: Java's split drops the empty part)", func(e *Env) {
			e.MkACL("a", "", world(task.PermRead), task.ACL{Perms: task.PermRead, Scheme: "digest", ID: "u:h\nq"},
				task.ACL{Perms: task.PermRead, Scheme: "digest", ID: "v:h\r\nw:"})
			e.Eq(e.ACLOf(e.C, e.P("a")).ACL, []task.ACL{world(task.PermRead), {Perms: task.PermRead, Scheme: "digest", ID: "u:x\nq"},
				{Perms: task.PermRead, Scheme: "digest", ID: "v:x\r\nw:x"}}, "redacted")
		}},
		{"acl/not-inherited", "ACLs are not inherited: a parent nobody may read does not hide an open child", func(e *Env) {
			e.Mk("p", "p/c")
			e.SetACL(e.C, e.P("p"), world(task.PermDelete))
			e.Err(e.C.Do(get(e.P("p"))).Err, task.ErrNoAuth, "get parent")
			e.Err(e.C.Do(get(e.P("p/c"))).Err, nil, "get child")
			e.Err(e.C.Do(set(e.P("p/c"))).Err, nil, "set child")
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("p/c"), Version: -1}).Err, nil, "delete child")
		}},
		{"acl/children-lists-unreadable", "getChildren lists children the session may not read", func(e *Env) {
			e.Mk("p")
			e.C.Do(&task.CreateRequest{Path: e.P("p/hidden"), ACL: []task.ACL{world(0)}})
			e.Eq(sorted(e.C.Do(&task.GetChildrenRequest{Path: e.P("p")}).Children), []string{"hidden"}, "children")
		}},
		{"acl/multi-check-needs-read", "a multi's check needs READ on the node: NoAuth fails the multi", func(e *Env) {
			e.MkACL("a", "", noRead)
			r := e.C.Do(&task.MultiRequest{Ops: []task.MultiOp{
				create(e.P("b"), task.Persistent),
				&task.CheckRequest{Path: e.P("a"), Version: 0},
			}})
			e.Err(r.Err, task.ErrNoAuth, "multi")
			e.True(len(r.Results) == 2 && r.Results[0].RolledBack && r.Results[1].Err == task.ErrNoAuth, "results %+v", r.Results)
			e.True(!e.Exists(e.P("b")), "first op kept")
		}},
		{"acl/multi-checks-each-op", "each op of a multi is checked against its own node: a set without WRITE fails the multi, rolling back earlier ops", func(e *Env) {
			e.MkACL("ro", "", noWrite)
			e.MkACL("nd", "", noDelete)
			e.Create(e.P("nd/c"), "", task.Persistent)
			r := e.C.Do(&task.MultiRequest{Ops: []task.MultiOp{
				create(e.P("new"), task.Persistent),
				&task.SetDataRequest{Path: e.P("ro"), Data: []byte("x"), Version: -1},
				&task.DeleteRequest{Path: e.P("nd/c"), Version: -1},
			}})
			e.Err(r.Err, task.ErrNoAuth, "multi")
			e.True(len(r.Results) == 3 && r.Results[0].RolledBack && r.Results[1].Err == task.ErrNoAuth &&
				r.Results[2].Err == task.ErrRuntimeInconsistency, "results %+v", r.Results)
			e.True(!e.Exists(e.P("new")), "first op kept")
			r = e.C.Do(&task.MultiRequest{Ops: []task.MultiOp{
				&task.CheckRequest{Path: e.P("ro"), Version: 0},
				&task.DeleteRequest{Path: e.P("nd/c"), Version: -1},
			}})
			e.True(len(r.Results) == 2 && r.Results[0].RolledBack && r.Results[1].Err == task.ErrNoAuth, "delete in a multi: results %+v", r.Results)
		}},
		{"acl/multi-sees-own-create-acl", "a multi's later op is checked against the ACL an earlier op of the same multi gave", func(e *Env) {
			r := e.C.Do(&task.MultiRequest{Ops: []task.MultiOp{
				&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{noCreate}},
				create(e.P("a/c"), task.Persistent),
			}})
			e.Err(r.Err, task.ErrNoAuth, "multi")
			e.True(len(r.Results) == 2 && r.Results[0].RolledBack && r.Results[1].Err == task.ErrNoAuth, "results %+v", r.Results)
		}},
		{"acl/ephemeral-owner-no-privilege", "owning an ephemeral grants nothing: its ACL binds its own session too", func(e *Env) {
			r := e.C.Do(&task.CreateRequest{Path: e.P("e"), Mode: task.Ephemeral, ACL: []task.ACL{world(task.PermAdmin)}})
			e.Err(r.Err, nil, "create")
			e.Err(e.C.Do(get(e.P("e"))).Err, task.ErrNoAuth, "get own ephemeral")
			e.Err(e.C.Do(set(e.P("e"))).Err, task.ErrNoAuth, "set own ephemeral")
		}},
	}
}

// The order of checks: which error wins when several apply.
func aclPrecedenceCases() []Case {
	return []Case{
		{"acl/order-create-invalid-acl-before-no-auth", "create: InvalidACL before NoAuth on the parent", func(e *Env) {
			e.MkACL("p", "", noCreate)
			e.Err(e.C.Do(&task.CreateRequest{Path: e.P("p/c")}).Err, task.ErrInvalidACL, "create")
		}},
		{"acl/order-create-no-auth-before-exists", "create: NoAuth on the parent before NodeExists", func(e *Env) {
			e.Mk("p", "p/c")
			e.SetACL(e.C, e.P("p"), noCreate)
			e.Err(e.C.Do(create(e.P("p/c"), task.Persistent)).Err, task.ErrNoAuth, "create")
		}},
		{"acl/order-create-no-auth-before-ephemeral-parent", "create: NoAuth on the parent before NoChildrenForEphemerals", func(e *Env) {
			e.C.Do(&task.CreateRequest{Path: e.P("e"), Mode: task.Ephemeral, ACL: []task.ACL{noCreate}})
			e.Err(e.C.Do(create(e.P("e/c"), task.Persistent)).Err, task.ErrNoAuth, "create")
		}},
		{"acl/order-create-no-node-first", "create under a missing parent is NoNode (there is no ACL to check)", func(e *Env) {
			e.Err(e.C.Do(create(e.P("x/c"), task.Persistent)).Err, task.ErrNoNode, "create")
		}},
		{"acl/order-delete-no-auth-before-no-node", "delete: NoAuth on the parent comes before the node is looked up, so a missing node is NoAuth", func(e *Env) {
			e.MkACL("p", "", noDelete)
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("p/missing"), Version: -1}).Err, task.ErrNoAuth, "delete")
		}},
		{"acl/order-delete-no-auth-before-bad-version-and-not-empty", "delete: NoAuth before BadVersion and NotEmpty", func(e *Env) {
			e.Mk("p", "p/c", "p/c/d")
			e.SetACL(e.C, e.P("p"), noDelete)
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("p/c"), Version: 9}).Err, task.ErrNoAuth, "bad version")
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("p/c"), Version: -1}).Err, task.ErrNoAuth, "not empty")
		}},
		{"acl/order-delete-missing-parent", "delete below a missing parent is NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("x/c"), Version: -1}).Err, task.ErrNoNode, "delete")
		}},
		{"acl/order-set-no-auth-before-bad-version", "setData: NoAuth before BadVersion", func(e *Env) {
			e.MkACL("a", "", noWrite)
			e.Err(e.C.Do(&task.SetDataRequest{Path: e.P("a"), Version: 5}).Err, task.ErrNoAuth, "set")
		}},
		{"acl/order-set-acl", "setACL: InvalidACL, then NoAuth, then BadVersion", func(e *Env) {
			e.MkACL("a", "", noAdmin)
			e.Err(e.C.Do(setACL(e.P("a"), 5)).Err, task.ErrInvalidACL, "invalid acl")
			e.Err(e.C.Do(setACL(e.P("a"), 5, task.OpenACL...)).Err, task.ErrNoAuth, "bad version")
		}},
		{"acl/order-check-no-auth-before-bad-version", "a multi's check: NoAuth before BadVersion", func(e *Env) {
			e.MkACL("a", "", noRead)
			r := e.C.Do(&task.MultiRequest{Ops: []task.MultiOp{&task.CheckRequest{Path: e.P("a"), Version: 3}}})
			e.Err(r.Err, task.ErrNoAuth, "multi")
		}},
		{"acl/order-reads-no-node-first", "getData, getChildren and getACL of a missing node are NoNode", func(e *Env) {
			e.Err(e.C.Do(get(e.P("x"))).Err, task.ErrNoNode, "get")
			e.Err(e.C.Do(&task.GetChildrenRequest{Path: e.P("x")}).Err, task.ErrNoNode, "children")
			e.Err(e.C.Do(&task.GetACLRequest{Path: e.P("x")}).Err, task.ErrNoNode, "getACL")
		}},
		{"acl/no-auth-takes-zxid", "a write refused with NoAuth is logged as an error txn: it takes a zxid", func(e *Env) {
			e.MkACL("ro", "", noWrite)
			_, a := e.Create(e.P("a"), "", task.Persistent)
			e.Err(e.C.Do(set(e.P("ro"))).Err, task.ErrNoAuth, "set")
			_, b := e.Create(e.P("b"), "", task.Persistent)
			e.Eq(b.Czxid-a.Czxid, int64(2), "zxids between creates")
		}},
	}
}

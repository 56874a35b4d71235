package conformance

import (
	"github.com/zkflow/zkflow/task"
)

func create(path string, mode task.CreateMode) *task.CreateRequest {
	return &task.CreateRequest{Path: path, Mode: mode, ACL: task.OpenACL}
}

func errorCases() []Case {
	return []Case{
		{"errors/create-parent-missing", "create under a missing parent fails with NoNode", func(e *Env) {
			e.Err(e.C.Do(create(e.P("a/b"), task.Persistent)).Err, task.ErrNoNode, "create")
		}},
		{"errors/create-grandparent-missing", "create two levels below a missing node fails with NoNode (no recursive create)", func(e *Env) {
			e.Err(e.C.Do(create(e.P("a/b/c"), task.Persistent)).Err, task.ErrNoNode, "create")
			e.True(!e.Exists(e.P("a")), "no intermediate node created")
		}},
		{"errors/create-exists", "create of an existing node fails with NodeExists", func(e *Env) {
			e.Mk("a")
			e.Err(e.C.Do(create(e.P("a"), task.Persistent)).Err, task.ErrNodeExists, "create")
		}},
		{"errors/create-exists-ephemeral-mode", "create in another mode of an existing node still fails with NodeExists", func(e *Env) {
			e.Mk("a")
			e.Err(e.C.Do(create(e.P("a"), task.Ephemeral)).Err, task.ErrNodeExists, "create")
		}},
		{"errors/create-under-ephemeral", "create under an ephemeral node fails with NoChildrenForEphemerals", func(e *Env) {
			e.Create(e.P("e"), "", task.Ephemeral)
			e.Err(e.C.Do(create(e.P("e/c"), task.Persistent)).Err, task.ErrNoChildrenForEphemerals, "create")
		}},
		{"errors/create-ephemeral-under-ephemeral", "an ephemeral child of an ephemeral is refused too", func(e *Env) {
			e.Create(e.P("e"), "", task.Ephemeral)
			e.Err(e.C.Do(create(e.P("e/c"), task.Ephemeral)).Err, task.ErrNoChildrenForEphemerals, "create")
		}},
		{"errors/create-sequential-under-ephemeral", "a sequential child of an ephemeral is refused with NoChildrenForEphemerals", func(e *Env) {
			e.Create(e.P("e"), "", task.Ephemeral)
			e.Err(e.C.Do(create(e.P("e/c-"), task.PersistentSequential)).Err, task.ErrNoChildrenForEphemerals, "create")
		}},
		{"errors/create-empty-acl", "create with an empty ACL fails with InvalidACL", func(e *Env) {
			e.Err(e.C.Do(&task.CreateRequest{Path: e.P("a")}).Err, task.ErrInvalidACL, "create")
		}},
		{"errors/create-empty-acl-before-no-node", "an empty ACL is reported before a missing parent (fixupACL runs first)", func(e *Env) {
			e.Err(e.C.Do(&task.CreateRequest{Path: e.P("x/a")}).Err, task.ErrInvalidACL, "create")
		}},
		{"errors/create-world-bad-id", "world ACL with an id other than anyone is InvalidACL", func(e *Env) {
			r := e.C.Do(&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{{Perms: task.PermAll, Scheme: "world", ID: "someone"}}})
			e.Err(r.Err, task.ErrInvalidACL, "create")
		}},
		{"errors/create-ttl-disabled", "TTL nodes are refused with Unimplemented on a default server (extended types off)", func(e *Env) {
			if r, ok := e.Target.(Reaper); ok && r.Reaping().TTL {
				e.T.Skip("target has TTL nodes enabled")
			}
			r := e.C.Do(&task.CreateRequest{Path: e.P("t"), Mode: task.PersistentWithTTL, TTL: 60000 * 1e6, ACL: task.OpenACL})
			e.Err(r.Err, task.ErrUnimplemented, "create")
		}},
		{"errors/create-invalid-mode", "an unknown create mode is refused on the client", func(e *Env) {
			e.Err(e.C.Do(create(e.P("a"), 42)).Err, task.ErrInvalidArgument, "create")
		}},
		{"errors/create-data-too-large", "data over 1 MiB is refused", func(e *Env) {
			r := e.C.Do(&task.CreateRequest{Path: e.P("a"), Data: make([]byte, task.MaxDataSize+1), ACL: task.OpenACL})
			e.Err(r.Err, task.ErrDataTooLarge, "create")
		}},
		{"errors/set-data-too-large", "set with data over 1 MiB is refused", func(e *Env) {
			e.Mk("a")
			r := e.C.Do(&task.SetDataRequest{Path: e.P("a"), Data: make([]byte, task.MaxDataSize+1), Version: -1})
			e.Err(r.Err, task.ErrDataTooLarge, "set")
		}},
		{"errors/delete-missing", "delete of a missing node fails with NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("a"), Version: -1}).Err, task.ErrNoNode, "delete")
		}},
		{"errors/delete-missing-parent", "delete below a missing parent fails with NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("a/b"), Version: -1}).Err, task.ErrNoNode, "delete")
		}},
		{"errors/delete-missing-bad-version", "existence is checked before the version: NoNode, not BadVersion", func(e *Env) {
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("a"), Version: 7}).Err, task.ErrNoNode, "delete")
		}},
		{"errors/delete-bad-version", "delete with a wrong version fails with BadVersion", func(e *Env) {
			e.Mk("a")
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("a"), Version: 1}).Err, task.ErrBadVersion, "delete")
			e.True(e.Exists(e.P("a")), "node kept")
		}},
		{"errors/delete-bad-version-with-children", "the version is checked before the children: BadVersion, not NotEmpty", func(e *Env) {
			e.Mk("a", "a/b")
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("a"), Version: 5}).Err, task.ErrBadVersion, "delete")
		}},
		{"errors/delete-not-empty", "delete of a node with children fails with NotEmpty", func(e *Env) {
			e.Mk("a", "a/b")
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("a"), Version: -1}).Err, task.ErrNotEmpty, "delete")
		}},
		{"errors/delete-not-empty-right-version", "a matching version does not help a node with children: NotEmpty", func(e *Env) {
			e.Mk("a", "a/b")
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("a"), Version: 0}).Err, task.ErrNotEmpty, "delete")
		}},
		{"errors/delete-exact-version", "delete with the node's exact version succeeds", func(e *Env) {
			e.Mk("a")
			e.Set(e.P("a"), "1")
			e.Err(e.C.Do(&task.DeleteRequest{Path: e.P("a"), Version: 1}).Err, nil, "delete")
		}},
		{"errors/set-missing", "set of a missing node fails with NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.SetDataRequest{Path: e.P("a"), Version: -1}).Err, task.ErrNoNode, "set")
		}},
		{"errors/set-missing-bad-version", "set checks existence before version: NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.SetDataRequest{Path: e.P("a"), Version: 3}).Err, task.ErrNoNode, "set")
		}},
		{"errors/set-bad-version", "set with a wrong version fails with BadVersion and changes nothing", func(e *Env) {
			e.Mk("a")
			before := e.Stat(e.P("a"))
			e.Err(e.C.Do(&task.SetDataRequest{Path: e.P("a"), Data: []byte("x"), Version: 3}).Err, task.ErrBadVersion, "set")
			e.Eq(e.Stat(e.P("a")), before, "stat after failed set")
		}},
		{"errors/get-missing", "getData of a missing node fails with NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.GetDataRequest{Path: e.P("a")}).Err, task.ErrNoNode, "get")
		}},
		{"errors/children-missing", "getChildren of a missing node fails with NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.GetChildrenRequest{Path: e.P("a")}).Err, task.ErrNoNode, "children")
		}},
		{"errors/exists-missing", "exists of a missing node reports NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.ExistsRequest{Path: e.P("a")}).Err, task.ErrNoNode, "exists")
		}},
		{"errors/sync-missing-ok", "sync does not require the path to exist", func(e *Env) {
			r := e.C.Do(&task.SyncRequest{Path: e.P("nope")})
			e.Err(r.Err, nil, "sync")
		}},
		{"errors/sync-returns-path", "sync answers with the path it was given", func(e *Env) {
			r := e.C.Do(&task.SyncRequest{Path: e.Base})
			e.Err(r.Err, nil, "sync")
			e.Eq(r.Path, e.Base, "path")
		}},
	}
}

package conformance

import "github.com/zkflow/zkflow/task"

// configNode is the node a 3.5+ server keeps its dynamic configuration
// in. The server makes it readable by anyone and writable by no one but
// the super user (ZOOKEEPER-2014), with setACL at version -1, which it
// then reports as the node's aversion.
const configNode = "/zookeeper/config"

// Access to /zookeeper/config.
func aclConfigCases() []Case {
	return []Case{
		{"acl/zookeeper-config-acl", "/zookeeper/config's ACL is world:anyone READ, and its aversion is -1 (the server set it with version -1)", func(e *Env) {
			r := e.ACLOf(e.C, configNode)
			e.Eq(r.ACL, []task.ACL{world(task.PermRead)}, "ACL")
			e.Eq(r.Stat.Aversion, int32(-1), "aversion in getACL's Stat")
			e.Eq(e.Stat(configNode).Aversion, int32(-1), "aversion in exists' Stat")
			g := e.C.Do(get(configNode))
			e.Err(g.Err, nil, "get")
			e.Eq(g.Stat.Aversion, int32(-1), "aversion in getData's Stat")
			e.Err(e.C.Do(&task.GetChildrenRequest{Path: configNode}).Err, nil, "children")
		}},
		{"acl/zookeeper-config-set-no-auth", "setData on /zookeeper/config is NoAuth, with or without a digest credential, alone or in a multi; the node is unchanged", func(e *Env) {
			before := e.Stat(configNode)
			e.Err(e.C.Do(set(configNode)).Err, task.ErrNoAuth, "set")
			a := e.NewAuthClient(alice)
			e.Err(a.Do(set(configNode)).Err, task.ErrNoAuth, "set with a digest credential")
			m := e.C.Do(&task.MultiRequest{Ops: []task.MultiOp{set(configNode)}})
			e.Err(m.Err, task.ErrNoAuth, "multi of a set")
			e.Eq(e.Stat(configNode), before, "Stat after the refused sets")
		}},
		{"acl/zookeeper-config-create-no-auth", "creating a child of /zookeeper/config and setting its ACL are NoAuth", func(e *Env) {
			e.Err(e.C.Do(create(configNode+"/x", task.Persistent)).Err, task.ErrNoAuth, "create a child")
			e.Err(e.C.Do(setACL(configNode, -1, task.OpenACL...)).Err, task.ErrNoAuth, "setACL")
			e.True(!e.Exists(configNode+"/x"), "a child was made")
			e.Eq(e.ACLOf(e.C, configNode).ACL, []task.ACL{world(task.PermRead)}, "ACL after the refused setACL")
		}},
	}
}

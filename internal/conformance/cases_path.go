package conformance

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// invalidPaths break PathUtils.validatePath; the client refuses them
// before sending, with ErrInvalidPath.
var invalidPaths = []struct{ name, path string }{
	{"empty", ""},
	{"relative", "a"},
	{"trailing-slash", "/a/"},
	{"double-slash", "//a"},
	{"inner-double-slash", "/a//b"},
	{"dot", "/."},
	{"dotdot", "/.."},
	{"inner-dot", "/a/./b"},
	{"inner-dotdot", "/a/../b"},
	{"trailing-dot", "/a/."},
	{"nul", "/a\x00b"},
	{"control-01", "/a\x01"},
	{"control-1f", "/a\x1f"},
	{"del-7f", "/a\x7f"},
	{"c1-0085", "/a\u0085"},
	{"c1-009f", "/a\u009f"},
	{"private-e000", "/a\ue000"},
	{"private-f8ff", "/a\uf8ff"},
	{"specials-fff0", "/a\ufff0"},
	{"noncharacter-ffff", "/a\uffff"},
	{"supplementary-emoji", "/a\U0001F600"},
	{"invalid-utf8", "/a\xff"},
}

// validNames are legal node names (relative to Base).
var validNames = []struct{ name, rel string }{
	{"dot-inside", "a.b"},
	{"leading-dot", ".a"},
	{"leading-dotdot", "..a"},
	{"trailing-dotdot", "a.."},
	{"triple-dot", "..."},
	{"space", "a b"},
	{"latin1", "caf\u00e9"},
	{"cjk", "\u8282\u70b9"},
	{"just-below-private-use", "a\ud7ff"},
	{"after-private-use", "a\uf900"},
	{"colon-and-dash", "lock-a:b"},
}

func pathCases() []Case {
	var cs []Case
	for _, p := range invalidPaths {
		cs = append(cs, Case{
			Name:   "path/create-invalid-" + p.name,
			Checks: fmt.Sprintf("create of %q is refused with an invalid-path error (PathUtils.validatePath)", p.path),
			Run: func(e *Env) {
				r := e.C.Do(&task.CreateRequest{Path: p.path, ACL: task.OpenACL})
				e.Err(r.Err, task.ErrInvalidPath, "create")
			},
		})
	}
	ops := []struct {
		name string
		req  func(string) task.Request
	}{
		{"delete", func(p string) task.Request { return &task.DeleteRequest{Path: p, Version: -1} }},
		{"exists", func(p string) task.Request { return &task.ExistsRequest{Path: p} }},
		{"get", func(p string) task.Request { return &task.GetDataRequest{Path: p} }},
		{"set", func(p string) task.Request { return &task.SetDataRequest{Path: p, Version: -1} }},
		{"children", func(p string) task.Request { return &task.GetChildrenRequest{Path: p} }},
		{"sync", func(p string) task.Request { return &task.SyncRequest{Path: p} }},
	}
	for _, op := range ops {
		for _, p := range []struct{ name, path string }{{"trailing-slash", "/a/"}, {"relative", "a"}, {"dotdot", "/a/.."}} {
			cs = append(cs, Case{
				Name:   "path/" + op.name + "-invalid-" + p.name,
				Checks: fmt.Sprintf("%s of %q is refused with an invalid-path error", op.name, p.path),
				Run: func(e *Env) {
					e.Err(e.C.Do(op.req(p.path)).Err, task.ErrInvalidPath, op.name)
				},
			})
		}
	}
	for _, v := range validNames {
		cs = append(cs, Case{
			Name:   "path/valid-" + v.name,
			Checks: fmt.Sprintf("%q is a legal node name: create, exists and delete succeed", v.rel),
			Run: func(e *Env) {
				p := e.P(v.rel)
				name, _ := e.Create(p, "x", task.Persistent)
				e.Eq(name, p, "created name")
				e.True(e.Exists(p), "exists after create")
				e.Delete(p)
				e.True(!e.Exists(p), "gone after delete")
			},
		})
	}
	cs = append(cs,
		Case{"path/sequential-trailing-slash", "a sequential create may end in / : the name is just the 10-digit number", func(e *Env) {
			name, _ := e.Create(e.Base+"/", "", task.PersistentSequential)
			e.Eq(name, e.Base+"/0000000000", "name")
		}},
		Case{"path/nonsequential-trailing-slash", "a non-sequential create ending in / is invalid", func(e *Env) {
			r := e.C.Do(&task.CreateRequest{Path: e.Base + "/", ACL: task.OpenACL})
			e.Err(r.Err, task.ErrInvalidPath, "create")
		}},
		Case{"path/root-exists", "the root / always exists", func(e *Env) {
			e.True(e.Exists("/"), "root exists")
		}},
		Case{"path/root-create-exists", "create / fails with NodeExists", func(e *Env) {
			r := e.C.Do(&task.CreateRequest{Path: "/", ACL: task.OpenACL})
			e.Err(r.Err, task.ErrNodeExists, "create /")
		}},
		Case{"path/root-delete-bad-arguments", "delete / is refused with BadArguments (a special path)", func(e *Env) {
			e.Err(e.C.Do(&task.DeleteRequest{Path: "/", Version: -1}).Err, task.ErrBadArguments, "delete /")
		}},
		Case{"path/zookeeper-delete-bad-arguments", "delete /zookeeper is refused with BadArguments (a special path)", func(e *Env) {
			e.Err(e.C.Do(&task.DeleteRequest{Path: "/zookeeper", Version: -1}).Err, task.ErrBadArguments, "delete /zookeeper")
		}},
		Case{"path/zookeeper-node-present", "a server has the /zookeeper node with a quota child", func(e *Env) {
			r := e.C.Do(&task.GetChildrenRequest{Path: "/zookeeper"})
			e.Err(r.Err, nil, "children /zookeeper")
			found := false
			for _, c := range r.Children {
				found = found || c == "quota"
			}
			e.True(found, "/zookeeper children %v lack quota", r.Children)
		}},
		Case{"path/long-name", "a 1000-character node name is legal", func(e *Env) {
			long := make([]byte, 1000)
			for i := range long {
				long[i] = 'a' + byte(i%26)
			}
			e.Create(e.P(string(long)), "", task.Persistent)
		}},
	)
	return cs
}

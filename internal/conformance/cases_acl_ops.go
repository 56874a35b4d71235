package conformance

import "github.com/zkflow/zkflow/task"

// getACL and setACL themselves.
func aclReadWriteCases() []Case {
	return []Case{
		{"acl/get-open", "getACL of a node created with world:anyone ALL returns that list and the node's Stat", func(e *Env) {
			e.Mk("a")
			r := e.ACLOf(e.C, e.P("a"))
			e.Eq(r.ACL, task.OpenACL, "acl")
			e.Eq(r.Stat, e.Stat(e.P("a")), "stat")
		}},
		{"acl/get-as-created", "getACL returns the entries a node was created with, in their order", func(e *Env) {
			acl := []task.ACL{world(task.PermRead | task.PermAdmin), aliceACL(task.PermAll), ipACL(task.PermWrite, "10.0.0.0/8")}
			e.MkACL("a", "", acl...)
			e.Eq(e.ACLOf(e.C, e.P("a")).ACL, acl, "acl")
		}},
		{"acl/get-missing", "getACL of a missing node fails with NoNode", func(e *Env) {
			e.Err(e.C.Do(&task.GetACLRequest{Path: e.P("a")}).Err, task.ErrNoNode, "getACL")
		}},
		{"acl/get-takes-no-zxid", "getACL is a read: it takes no zxid", func(e *Env) {
			_, a := e.Create(e.P("a"), "", task.Persistent)
			e.ACLOf(e.C, e.P("a"))
			_, b := e.Create(e.P("b"), "", task.Persistent)
			e.Eq(b.Czxid-a.Czxid, int64(1), "zxids between creates")
		}},
		{"acl/set-replaces", "setACL replaces the whole list; getACL then returns the new one", func(e *Env) {
			e.Mk("a")
			acl := []task.ACL{world(task.PermRead | task.PermAdmin), aliceACL(task.PermWrite)}
			e.SetACL(e.C, e.P("a"), acl...)
			e.Eq(e.ACLOf(e.C, e.P("a")).ACL, acl, "acl")
		}},
		{"acl/set-stat", "setACL raises aversion only, and answers with the node's new Stat", func(e *Env) {
			e.Mk("a", "a/c")
			e.Set(e.P("a"), "x")
			before := e.Stat(e.P("a"))
			r := e.C.Do(setACL(e.P("a"), -1, world(task.PermAll)))
			e.Err(r.Err, nil, "setACL")
			after := e.Stat(e.P("a"))
			e.Eq(r.Stat, after, "stat in the reply")
			want := before
			want.Aversion = 1
			e.Eq(after, want, "stat after setACL")
		}},
		{"acl/set-same-acl-counts", "setACL to the ACL the node has already still raises aversion", func(e *Env) {
			e.Mk("a")
			r := e.C.Do(setACL(e.P("a"), 0, task.OpenACL...))
			e.Err(r.Err, nil, "setACL")
			e.Eq(r.Stat.Aversion, int32(1), "aversion")
		}},
		{"acl/set-version", "setACL checks the ACL version (aversion), not the data version", func(e *Env) {
			e.Mk("a")
			e.Set(e.P("a"), "x") // version 1, aversion 0
			e.Err(e.C.Do(setACL(e.P("a"), 1, task.OpenACL...)).Err, task.ErrBadVersion, "setACL with the data version")
			e.Err(e.C.Do(setACL(e.P("a"), 0, task.OpenACL...)).Err, nil, "setACL with aversion 0")
			e.Err(e.C.Do(setACL(e.P("a"), 0, task.OpenACL...)).Err, task.ErrBadVersion, "setACL with the old aversion")
			r := e.C.Do(setACL(e.P("a"), 1, task.OpenACL...))
			e.Err(r.Err, nil, "setACL with aversion 1")
			e.Eq([2]int32{r.Stat.Aversion, r.Stat.Version}, [2]int32{2, 1}, "aversion, version")
		}},
		{"acl/set-bad-version-changes-nothing", "a setACL that fails with BadVersion leaves the ACL and Stat as they were", func(e *Env) {
			e.Mk("a")
			before := e.Stat(e.P("a"))
			e.Err(e.C.Do(setACL(e.P("a"), 4, world(task.PermRead))).Err, task.ErrBadVersion, "setACL")
			e.Eq(e.ACLOf(e.C, e.P("a")).ACL, task.OpenACL, "acl")
			e.Eq(e.Stat(e.P("a")), before, "stat")
		}},
		{"acl/set-data-keeps-aversion", "setData leaves aversion; setACL leaves version", func(e *Env) {
			e.Mk("a")
			e.SetACL(e.C, e.P("a"), task.OpenACL...)
			st := e.Set(e.P("a"), "x")
			e.Eq([2]int32{st.Version, st.Aversion}, [2]int32{1, 1}, "version, aversion")
		}},
		{"acl/set-missing", "setACL of a missing node fails with NoNode, whatever the version", func(e *Env) {
			e.Err(e.C.Do(setACL(e.P("a"), -1, task.OpenACL...)).Err, task.ErrNoNode, "setACL")
			e.Err(e.C.Do(setACL(e.P("a"), 3, task.OpenACL...)).Err, task.ErrNoNode, "setACL bad version")
		}},
		{"acl/set-takes-zxid", "setACL is a write: it takes a zxid, also when it fails, and leaves mzxid", func(e *Env) {
			_, a := e.Create(e.P("a"), "", task.Persistent)
			e.SetACL(e.C, e.P("a"), task.OpenACL...)
			e.Err(e.C.Do(setACL(e.P("a"), 7, task.OpenACL...)).Err, task.ErrBadVersion, "setACL")
			_, b := e.Create(e.P("b"), "", task.Persistent)
			e.Eq(b.Czxid-a.Czxid, int64(3), "zxids between creates")
			e.Eq(e.Stat(e.P("a")).Mzxid, a.Mzxid, "mzxid after setACL")
		}},
		{"acl/set-root", "the root's ACL can be read and set like any node's", func(e *Env) {
			r := e.ACLOf(e.C, "/")
			e.Eq(r.ACL, task.OpenACL, "root acl")
			s := e.C.Do(setACL("/", r.Stat.Aversion, task.OpenACL...))
			e.Err(s.Err, nil, "setACL /")
			e.Eq(s.Stat.Aversion, r.Stat.Aversion+1, "root aversion")
		}},
		{"acl/duplicates-dropped", "repeated entries are stored once; entries differing only in perms are kept", func(e *Env) {
			e.MkACL("a", "", world(task.PermAll), world(task.PermAll))
			e.Eq(e.ACLOf(e.C, e.P("a")).ACL, []task.ACL{world(task.PermAll)}, "create")
			e.SetACL(e.C, e.P("a"), world(task.PermRead), aliceACL(task.PermAll), world(task.PermRead), world(task.PermAdmin))
			e.Eq(e.ACLOf(e.C, e.P("a")).ACL, []task.ACL{world(task.PermRead), aliceACL(task.PermAll), world(task.PermAdmin)}, "setACL")
		}},
		{"acl/set-no-watch", "setACL fires no watch: not on the node, not on its parent", func(e *Env) {
			e.Mk("a")
			c2 := e.NewClient()
			_, wg := getW(c2, e.P("a"))
			_, we := existsW(c2, e.P("a"))
			_, wc := childrenW(c2, e.Base)
			e.SetACL(e.C, e.P("a"), world(task.PermAll))
			e.NoEvents(c2, wg, "get watch")
			e.NoEvents(c2, we, "exists watch")
			e.NoEvents(c2, wc, "children watch")
		}},
	}
}

// Which lists the server refuses (InvalidACL), and what it accepts.
func aclValidityCases() []Case {
	invalid := func(name, checks string, acl ...task.ACL) Case {
		return Case{"acl/invalid-" + name, checks, func(e *Env) {
			e.Err(e.C.Do(&task.CreateRequest{Path: e.P("a"), ACL: acl}).Err, task.ErrInvalidACL, "create")
			e.True(!e.Exists(e.P("a")), "node created")
			e.Mk("b")
			e.Err(e.C.Do(setACL(e.P("b"), -1, acl...)).Err, task.ErrInvalidACL, "setACL")
			e.Eq(e.ACLOf(e.C, e.P("b")).ACL, task.OpenACL, "acl after refused setACL")
		}}
	}
	valid := func(name, checks string, acl ...task.ACL) Case {
		// world ADMIN lets e.C read the list back, in full.
		acl = append(acl, world(task.PermAdmin))
		return Case{"acl/valid-" + name, checks, func(e *Env) {
			e.MkACL("a", "", acl...)
			e.Eq(e.ACLOf(e.C, e.P("a")).ACL, acl, "acl")
			e.Mk("b")
			e.SetACL(e.C, e.P("b"), acl...)
			e.Eq(e.ACLOf(e.C, e.P("b")).ACL, acl, "acl set")
		}}
	}
	all := task.PermAll
	return []Case{
		invalid("empty", "an empty list is InvalidACL, for setACL as for create"),
		invalid("unknown-scheme", "a scheme without an authentication provider is InvalidACL", task.ACL{Perms: all, Scheme: "foo", ID: "bar"}),
		invalid("world-other-id", "world with an id other than anyone is InvalidACL (world has no provider)", task.ACL{Perms: all, Scheme: "world", ID: "everyone"}),
		invalid("world-empty-id", "world with an empty id is InvalidACL", task.ACL{Perms: all, Scheme: "world"}),
		invalid("sasl", "sasl is not a default scheme: InvalidACL", task.ACL{Perms: all, Scheme: "sasl", ID: "alice"}),
		invalid("x509", "x509 is not a default scheme: InvalidACL", task.ACL{Perms: all, Scheme: "x509", ID: "CN=alice"}),
		invalid("super", "super is a digest user, not a scheme: InvalidACL", task.ACL{Perms: all, Scheme: "super"}),
		invalid("scheme-case", "scheme names are case-sensitive: World is InvalidACL", task.ACL{Perms: all, Scheme: "World", ID: "anyone"}),
		invalid("one-bad-entry", "one bad entry makes the whole list InvalidACL", world(all), task.ACL{Perms: all, Scheme: "foo", ID: "bar"}),
		invalid("auth-no-credentials", "auth from a session with no authenticated id is InvalidACL (its ip id does not count)", authACL(all)),
		invalid("digest-no-colon", "a digest id without a colon is InvalidACL", task.ACL{Perms: all, Scheme: "digest", ID: "alice"}),
		invalid("digest-two-colons", "a digest id with two colons is InvalidACL", task.ACL{Perms: all, Scheme: "digest", ID: "alice:a:b"}),
		invalid("digest-empty-hash", "a digest id with nothing after the colon is InvalidACL (Java's split drops the empty part)", task.ACL{Perms: all, Scheme: "digest", ID: "alice:"}),
		invalid("digest-colon-only", "a digest id of a lone colon is InvalidACL", task.ACL{Perms: all, Scheme: "digest", ID: ":"}),
		invalid("digest-empty", "an empty digest id is InvalidACL", task.ACL{Perms: all, Scheme: "digest"}),
		invalid("ip-three-parts", "an ip id must have four parts", ipACL(all, "10.0.0")),
		invalid("ip-out-of-range", "an ip id's parts are in [0, 255]", ipACL(all, "10.0.0.256")),
		invalid("ip-name", "an ip id is not a host name", ipACL(all, "localhost")),
		invalid("ip-v6", "ZooKeeper 3.8 knows no IPv6 ip ids", ipACL(all, "::1")),
		invalid("ip-bits-too-many", "an ip mask is at most 32 bits", ipACL(all, "10.0.0.0/33")),
		invalid("ip-bits-negative", "an ip mask is not negative", ipACL(all, "10.0.0.0/-1")),
		invalid("ip-bits-empty", "an ip id ending in a slash is InvalidACL", ipACL(all, "10.0.0.0/")),
		invalid("ip-bits-not-number", "an ip mask is a number", ipACL(all, "10.0.0.0/8/8")),
		invalid("ip-empty", "an empty ip id is InvalidACL", ipACL(all, "")),
		valid("digest-clear-text", "a digest id with a password in clear text is valid (it will match no one)", task.ACL{Perms: all, Scheme: "digest", ID: "alice:wonderland"}),
		valid("digest-empty-user", "a digest id with an empty user is valid", task.ACL{Perms: all, Scheme: "digest", ID: ":hash"}),
		valid("ip-forms", "ip ids: an address, a range with a mask, /0 and /32",
			ipACL(task.PermRead, "10.1.2.3"), ipACL(task.PermRead, "10.0.0.0/8"), ipACL(task.PermRead, "0.0.0.0/0"), ipACL(task.PermRead, "192.168.1.1/32")),
		valid("ip-host-bits", "an ip range need not have its host bits zero", ipACL(task.PermRead, "10.1.2.3/8")),
		valid("ip-leading-zeros-and-sign", "ip parts are parsed as Java ints: leading zeros and a plus sign pass", ipACL(task.PermRead, "010.0.0.+1")),
		valid("perms-zero", "perms 0 is a valid entry", world(0)),
		valid("perms-beyond-admin", "perms beyond ADMIN are stored as given", world(0x7fffffff)),
		{"acl/invalid-before-no-node", "setACL checks the new ACL before the node: InvalidACL, not NoNode", func(e *Env) {
			e.Err(e.C.Do(setACL(e.P("nope"), -1)).Err, task.ErrInvalidACL, "setACL")
		}},
		{"acl/invalid-in-multi", "an invalid ACL fails a multi's create with InvalidACL and rolls the multi back", func(e *Env) {
			r := e.C.Do(&task.MultiRequest{Ops: []task.MultiOp{
				create(e.P("a"), task.Persistent),
				&task.CreateRequest{Path: e.P("b"), ACL: []task.ACL{{Perms: all, Scheme: "foo", ID: "x"}}},
			}})
			e.Err(r.Err, task.ErrInvalidACL, "multi")
			e.True(len(r.Results) == 2 && r.Results[0].RolledBack && r.Results[1].Err == task.ErrInvalidACL, "results %+v", r.Results)
			e.True(!e.Exists(e.P("a")), "first op kept")
		}},
	}
}

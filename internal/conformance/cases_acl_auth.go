package conformance

import "github.com/zkflow/zkflow/task"

// Who a session is: digest credentials, "auth", ip.
func aclIdentityCases() []Case {
	return []Case{
		{"acl/digest-grants", "a digest entry grants its perms to a session that presented user:password, and to no other", func(e *Env) {
			e.MkACL("a", "x", aliceACL(task.PermAll))
			a := e.NewAuthClient(alice)
			b := e.NewAuthClient(bob)
			r := a.Do(get(e.P("a")))
			e.Err(r.Err, nil, "alice get")
			e.Eq(string(r.Data), "x", "data")
			e.Err(a.Do(set(e.P("a"))).Err, nil, "alice set")
			e.Err(a.Do(create(e.P("a/c"), task.Persistent)).Err, nil, "alice create child")
			e.Err(a.Do(&task.GetChildrenRequest{Path: e.P("a")}).Err, nil, "alice children")
			e.Err(a.Do(&task.DeleteRequest{Path: e.P("a/c"), Version: -1}).Err, nil, "alice delete child")
			e.Err(b.Do(get(e.P("a"))).Err, task.ErrNoAuth, "bob get")
			e.Err(b.Do(set(e.P("a"))).Err, task.ErrNoAuth, "bob set")
			e.Err(e.C.Do(get(e.P("a"))).Err, task.ErrNoAuth, "anonymous get")
			e.Eq(e.ACLOf(a, e.P("a")).ACL, []task.ACL{aliceACL(task.PermAll)}, "alice reads the ACL in full")
			e.SetACL(a, e.P("a"), world(task.PermRead))
			e.Err(b.Do(get(e.P("a"))).Err, nil, "bob get after alice opened it")
		}},
		{"acl/digest-wrong-password", "the same user with another password is another id", func(e *Env) {
			e.MkACL("a", "", aliceACL(task.PermAll))
			c := e.NewAuthClient(task.AuthInfo{Scheme: "digest", Auth: []byte("alice:looking-glass")})
			e.Err(c.Do(get(e.P("a"))).Err, task.ErrNoAuth, "get")
		}},
		{"acl/digest-clear-text-matches-no-one", "a digest entry whose id holds the password in clear text matches no session", func(e *Env) {
			e.MkACL("a", "", task.ACL{Perms: task.PermAll, Scheme: "digest", ID: "alice:wonderland"})
			a := e.NewAuthClient(alice)
			e.Err(a.Do(get(e.P("a"))).Err, task.ErrNoAuth, "get")
		}},
		{"acl/digest-credential-forms", "the digest id of a credential is its text before the first colon, a colon and base64(sha1(credential)), colons or not (task.DigestID)", func(e *Env) {
			for i, cred := range []string{"a:b:c", "nocolon", ":", ""} {
				c := e.NewAuthClient(task.AuthInfo{Scheme: "digest", Auth: []byte(cred)})
				p := e.P(string(rune('a' + i)))
				e.Err(c.Do(&task.CreateRequest{Path: p, ACL: []task.ACL{authACL(task.PermAll)}}).Err, nil, "create by "+cred)
				e.Eq(e.ACLOf(c, p).ACL, []task.ACL{{Perms: task.PermAll, Scheme: "digest", ID: task.DigestID(cred)}}, "acl of "+cred)
			}
		}},
		{"acl/digest-credential-not-utf8", "the server reads a digest credential as a Java String: bytes that are not UTF-8 are U+FFFD before the hash, so the id is task.DigestID of that text, not of the bytes", func(e *Env) {
			cred := "u:p\xff\xfe"
			c := e.NewAuthClient(task.AuthInfo{Scheme: "digest", Auth: []byte(cred)})
			e.MkACL("a", "", task.ACL{Perms: task.PermAll, Scheme: "digest", ID: task.DigestID(cred)})
			e.Err(c.Do(get(e.P("a"))).Err, task.ErrNoAuth, "get of a node for the hash of the bytes")
			e.Err(c.Do(&task.CreateRequest{Path: e.P("b"), ACL: []task.ACL{authACL(task.PermAll)}}).Err, nil, "create with auth")
			id := task.DigestID("u:p\ufffd\ufffd")
			e.Eq(e.ACLOf(c, e.P("b")).ACL, []task.ACL{{Perms: task.PermAll, Scheme: "digest", ID: id}}, "acl")
			e.MkACL("d", "", task.ACL{Perms: task.PermAll, Scheme: "digest", ID: id})
			e.Err(c.Do(get(e.P("d"))).Err, nil, "get of a node for the hash of the text")
		}},
		{"acl/ip-credential-adds-nothing", "an ip credential is accepted and adds nothing: the session has its address already, and ip is not authenticated (auth is InvalidACL)", func(e *Env) {
			c := e.NewAuthClient(task.AuthInfo{Scheme: "ip", Auth: []byte("10.1.2.3")})
			e.MkACL("a", "", ipACL(task.PermRead, "10.1.2.3"))
			e.Err(c.Do(get(e.P("a"))).Err, task.ErrNoAuth, "get of an entry for the address it claimed")
			e.Err(c.Do(&task.CreateRequest{Path: e.P("b"), ACL: []task.ACL{authACL(task.PermAll)}}).Err, task.ErrInvalidACL, "create with auth")
		}},
		{"acl/digest-perms-per-entry", "each entry grants only its own perms; a session gets the union of the entries it matches", func(e *Env) {
			e.MkACL("a", "", aliceACL(task.PermRead), bobACL(task.PermWrite))
			a := e.NewAuthClient(alice)
			b := e.NewAuthClient(bob)
			both := e.NewAuthClient(alice, bob)
			e.Err(a.Do(get(e.P("a"))).Err, nil, "alice get")
			e.Err(a.Do(set(e.P("a"))).Err, task.ErrNoAuth, "alice set")
			e.Err(b.Do(get(e.P("a"))).Err, task.ErrNoAuth, "bob get")
			e.Err(b.Do(set(e.P("a"))).Err, nil, "bob set")
			e.Err(both.Do(get(e.P("a"))).Err, nil, "alice+bob get")
			e.Err(both.Do(set(e.P("a"))).Err, nil, "alice+bob set")
		}},
		{"acl/world-with-digest", "world entries still apply to an authenticated session", func(e *Env) {
			e.MkACL("a", "", world(task.PermRead), bobACL(task.PermAll))
			a := e.NewAuthClient(alice)
			e.Err(a.Do(get(e.P("a"))).Err, nil, "alice get")
			e.Err(a.Do(set(e.P("a"))).Err, task.ErrNoAuth, "alice set")
		}},
		{"acl/auth-expands", "auth in a create stands for the creator's digest id: the node stores that", func(e *Env) {
			a := e.NewAuthClient(alice)
			e.Err(a.Do(&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{authACL(task.PermRead | task.PermAdmin)}}).Err, nil, "create")
			e.Eq(e.ACLOf(a, e.P("a")).ACL, []task.ACL{aliceACL(task.PermRead | task.PermAdmin)}, "acl")
			e.Err(e.C.Do(get(e.P("a"))).Err, task.ErrNoAuth, "anonymous get")
		}},
		{"acl/auth-id-ignored", "the id of an auth entry is ignored", func(e *Env) {
			a := e.NewAuthClient(alice)
			e.Err(a.Do(&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{{Perms: task.PermAll, Scheme: "auth", ID: "bob"}}}).Err, nil, "create")
			e.Eq(e.ACLOf(a, e.P("a")).ACL, []task.ACL{aliceACL(task.PermAll)}, "acl")
		}},
		{"acl/auth-every-id", "auth expands to every digest id of the session", func(e *Env) {
			c := e.NewAuthClient(alice, bob)
			e.Err(c.Do(&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{authACL(task.PermAll)}}).Err, nil, "create")
			e.Eq(sortedACL(e.ACLOf(c, e.P("a")).ACL), sortedACL([]task.ACL{aliceACL(task.PermAll), bobACL(task.PermAll)}), "acl")
		}},
		{"acl/auth-credential-once", "the same credential presented twice is one id", func(e *Env) {
			c := e.NewAuthClient(alice, alice)
			e.Err(c.Do(&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{authACL(task.PermAll)}}).Err, nil, "create")
			e.Eq(e.ACLOf(c, e.P("a")).ACL, []task.ACL{aliceACL(task.PermAll)}, "acl")
		}},
		{"acl/auth-with-others", "auth is expanded in place among the other entries, which stay", func(e *Env) {
			a := e.NewAuthClient(alice)
			e.Err(a.Do(&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{world(task.PermRead), authACL(task.PermAll), bobACL(task.PermWrite)}}).Err, nil, "create")
			e.Eq(e.ACLOf(a, e.P("a")).ACL, []task.ACL{world(task.PermRead), aliceACL(task.PermAll), bobACL(task.PermWrite)}, "acl")
		}},
		{"acl/auth-in-set-acl", "auth in a setACL expands to the setter's ids", func(e *Env) {
			e.Mk("a")
			b := e.NewAuthClient(bob)
			e.SetACL(b, e.P("a"), authACL(task.PermAll))
			e.Eq(e.ACLOf(b, e.P("a")).ACL, []task.ACL{bobACL(task.PermAll)}, "acl")
		}},
		{"acl/auth-in-multi", "auth in a multi's create expands to the session's ids", func(e *Env) {
			a := e.NewAuthClient(alice)
			r := a.Do(&task.MultiRequest{Ops: []task.MultiOp{&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{authACL(task.PermAll)}}}})
			e.Err(r.Err, nil, "multi")
			e.Eq(e.ACLOf(a, e.P("a")).ACL, []task.ACL{aliceACL(task.PermAll)}, "acl")
		}},
		{"acl/ip-scheme", "ip entries match the client's address (loopback here): exactly, by range, or not", func(e *Env) {
			for rel, tc := range map[string]struct {
				id   string
				want error
			}{
				"exact":    {"127.0.0.1", nil},
				"range":    {"127.0.0.0/8", nil},
				"all":      {"0.0.0.0/0", nil},
				"odd-mask": {"126.0.0.0/7", nil}, // 126.0.0.0-127.255.255.255
				"other":    {"10.0.0.0/8", task.ErrNoAuth},
				"neighbor": {"127.0.0.2/31", task.ErrNoAuth}, // 127.0.0.2-3
			} {
				e.MkACL(rel, "", ipACL(task.PermRead, tc.id))
				e.Err(e.C.Do(get(e.P(rel))).Err, tc.want, "get "+rel+" ip:"+tc.id)
			}
		}},
		{"acl/reconnect-keeps-auth", "credentials are presented again on reconnect: the session keeps its ids", func(e *Env) {
			d := Need[Dropper](e)
			e.MkACL("a", "", aliceACL(task.PermAll))
			a := e.NewAuthClient(alice)
			d.Drop(e.T, a.Conn, false)
			a.WaitState(task.StateConnected, 2)
			e.Err(a.Do(get(e.P("a"))).Err, nil, "get after reconnect")
		}},
		{"acl/expiry-keeps-auth", "the session that follows an expiry is authenticated too", func(e *Env) {
			x := Need[Expirer](e)
			e.MkACL("a", "", aliceACL(task.PermAll))
			a := e.NewAuthClient(alice)
			x.Expire(e.T, a.Conn)
			a.WaitState(task.StateExpired, 1)
			a.WaitState(task.StateConnected, 2)
			e.Err(a.Do(get(e.P("a"))).Err, nil, "get in the new session")
		}},
	}
}

// Which watches the server tells about a change to a node the watcher's
// session may not read.
func aclWatchCases() []Case {
	return []Case{
		{"acl/watch-readable-fires", "a watch of a session that may READ the node fires as usual", func(e *Env) {
			e.MkACL("a", "", aliceACL(task.PermAll))
			a := e.NewAuthClient(alice)
			_, w := getW(a, e.P("a"))
			a.Do(set(e.P("a")))
			e.OneEvent(a, w, task.EventNodeDataChanged, e.P("a"))
		}},
		{"acl/watch-withheld-data-changed", "a data change is not told to a watcher whose session may no longer READ the node", func(e *Env) {
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			e.SetACL(e.C, e.P("a"), noRead)
			e.Err(e.C.Do(set(e.P("a"))).Err, nil, "set")
			e.NoEvents(e.C, w, "watch of a session without READ")
		}},
		{"acl/watch-withheld-other-session", "the check is the watcher's: a writer that may READ does not make the event visible to a watcher that may not", func(e *Env) {
			e.MkACL("a", "", world(task.PermAll&^task.PermRead), aliceACL(task.PermAll))
			_, w := existsW(e.C, e.P("a"))
			a := e.NewAuthClient(alice)
			_, wa := getW(a, e.P("a"))
			a.Do(set(e.P("a")))
			e.OneEvent(a, wa, task.EventNodeDataChanged, e.P("a"))
			e.NoEvents(e.C, w, "watch of the session without READ")
		}},
		{"acl/watch-withheld-exists", "an exists watch (set without any permission) is not told of changes to a node it may not READ", func(e *Env) {
			e.MkACL("a", "", noRead)
			r, w := existsW(e.C, e.P("a"))
			e.Err(r.Err, nil, "exists")
			e.C.Do(set(e.P("a")))
			e.NoEvents(e.C, w, "after set")
			e.C.Do(&task.DeleteRequest{Path: e.P("a"), Version: -1})
			e.NoEvents(e.C, w, "after delete")
		}},
		{"acl/watch-withheld-created", "NodeCreated is not told to an exists watcher that may not READ the new node", func(e *Env) {
			_, w := existsW(e.C, e.P("a"))
			c2 := e.NewClient()
			c2.Do(&task.CreateRequest{Path: e.P("a"), ACL: []task.ACL{noRead}})
			e.NoEvents(e.C, w, "after create")
		}},
		{"acl/watch-withheld-deleted", "NodeDeleted is judged by the deleted node's ACL", func(e *Env) {
			e.Mk("a")
			_, wd := getW(e.C, e.P("a"))
			_, wc := childrenW(e.C, e.P("a"))
			e.SetACL(e.C, e.P("a"), noRead)
			c2 := e.NewClient()
			c2.Do(&task.DeleteRequest{Path: e.P("a"), Version: -1})
			e.NoEvents(e.C, wd, "data watch")
			e.NoEvents(e.C, wc, "child watch")
		}},
		{"acl/watch-children-parent-acl", "NodeChildrenChanged is judged by the parent's ACL, not the child's", func(e *Env) {
			e.Mk("p")
			_, w := childrenW(e.C, e.P("p"))
			c2 := e.NewClient()
			c2.Do(&task.CreateRequest{Path: e.P("p/secret"), ACL: []task.ACL{world(0)}})
			e.OneEvent(e.C, w, task.EventNodeChildrenChanged, e.P("p"))
		}},
		{"acl/watch-children-withheld", "NodeChildrenChanged is not told to a watcher that may no longer READ the parent", func(e *Env) {
			e.Mk("p")
			_, w := childrenW(e.C, e.P("p"))
			e.SetACL(e.C, e.P("p"), noRead)
			e.C.Do(create(e.P("p/c"), task.Persistent))
			e.NoEvents(e.C, w, "child watch")
		}},
		{"acl/watch-withheld-ephemeral-expiry", "the deletion of an expired session's ephemeral is judged by its ACL too", func(e *Env) {
			x := Need[Expirer](e)
			c2 := e.NewClient()
			c2.Do(&task.CreateRequest{Path: e.P("e"), Mode: task.Ephemeral, ACL: []task.ACL{noRead}})
			_, w := existsW(e.C, e.P("e"))
			_, wp := childrenW(e.C, e.Base)
			x.Expire(e.T, c2.Conn)
			e.OneEvent(e.C, wp, task.EventNodeChildrenChanged, e.Base)
			e.NoEvents(e.C, w, "exists watch on the ephemeral")
		}},
		{"acl/watch-withheld-forgotten", "the server forgets a withheld watch: after READ is given back, the next change is not told either", func(e *Env) {
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			e.SetACL(e.C, e.P("a"), noRead)
			e.Set(e.P("a"), "1")
			e.SetACL(e.C, e.P("a"), task.OpenACL...)
			e.Set(e.P("a"), "2")
			e.NoEvents(e.C, w, "after READ came back")
		}},
		{"acl/watch-withheld-client-keeps", "the client still holds a withheld watch: a later notification on the path fires it with the new watch", func(e *Env) {
			e.Mk("a")
			_, old := getW(e.C, e.P("a"))
			e.SetACL(e.C, e.P("a"), noRead)
			e.Set(e.P("a"), "1")
			e.SetACL(e.C, e.P("a"), task.OpenACL...)
			_, fresh := existsW(e.C, e.P("a"))
			e.NoEvents(e.C, old, "before the next change")
			e.Set(e.P("a"), "2")
			e.OneEvent(e.C, fresh, task.EventNodeDataChanged, e.P("a"))
			e.OneEvent(e.C, old, task.EventNodeDataChanged, e.P("a"))
		}},
		{"acl/watch-withheld-not-watching", "a withheld watch ends with NotWatching when its session closes", func(e *Env) {
			e.Mk("a")
			c2 := e.NewClient()
			_, w := getW(c2, e.P("a"))
			e.SetACL(e.C, e.P("a"), noRead)
			e.Set(e.P("a"), "1")
			e.NoEvents(c2, w, "withheld")
			c2.Conn.Close()
			ev := w.Wait()
			e.Eq([2]any{ev.Type, ev.State}, [2]any{task.EventNotWatching, task.StateClosed}, "event")
		}},
		{"acl/watch-change-while-cut-off-told", "a change made while the watcher was cut off fires on reconnect even if it may not READ the node: SetWatches passes no ACL (DataTree.setWatches, 3.8.4)", func(e *Env) {
			p := Need[Partitioner](e)
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			c2 := e.NewClient()
			p.Partition(e.T, e.C.Conn, DefaultTimeout/4)
			e.SetACL(c2, e.P("a"), noRead)
			c2.Do(set(e.P("a")))
			p.Advance(DefaultTimeout / 2)
			e.C.WaitState(task.StateConnected, 2)
			e.OneEvent(e.C, w, task.EventNodeDataChanged, e.P("a"))
		}},
		{"acl/watch-withheld-resent-on-reconnect", "the client re-sends a withheld watch when its connection comes back; it then fires", func(e *Env) {
			d := Need[Dropper](e)
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			e.SetACL(e.C, e.P("a"), noRead)
			e.Set(e.P("a"), "1")
			e.NoEvents(e.C, w, "withheld")
			d.Drop(e.T, e.C.Conn, false)
			e.C.WaitState(task.StateConnected, 2)
			e.SetACL(e.C, e.P("a"), task.OpenACL...)
			e.Set(e.P("a"), "2")
			e.OneEvent(e.C, w, task.EventNodeDataChanged, e.P("a"))
		}},
	}
}

package conformance

import (
	"github.com/zkflow/zkflow/task"
)

// moreCases are further probes, each first run against a real server.
func moreCases() []Case {
	return []Case{
		{"builtin/empty-data", "the nodes a fresh server has (/, /zookeeper, /zookeeper/quota, /zookeeper/config) hold empty data, not none: getData answers a 0-length buffer", func(e *Env) {
			for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
				r := e.C.Do(&task.GetDataRequest{Path: p})
				e.Err(r.Err, nil, "get "+p)
				e.True(r.Data != nil && len(r.Data) == 0, "get %s: data %q (nil %v), want empty, not none", p, r.Data, r.Data == nil)
			}
		}},
		{"stat/zookeeper-node-cversion", "the built-in /zookeeper node was never given children by creates, so its reported cversion is -numChildren", func(e *Env) {
			st := e.Stat("/zookeeper")
			e.True(st.NumChildren >= 1 && st.Cversion == -st.NumChildren, "/zookeeper stat %+v", st)
		}},
		{"stat/ephemeral-close-cversion", "a create and the session-close removal of an ephemeral child each count in the parent's reported cversion", func(e *Env) {
			before := e.Stat(e.Base)
			c2 := e.NewClient()
			c2.Do(create(e.P("e"), task.Ephemeral))
			c2.Conn.Close()
			e.Target.Settle()
			e.C.Barrier()
			e.Eq(e.Stat(e.Base).Cversion, before.Cversion+2, "cversion")
		}},
		{"seq/after-owner-closed", "an ephemeral sequential node removed with its session still counted: numbering continues", func(e *Env) {
			c2 := e.NewClient()
			c2.Do(create(e.P("e-"), task.EphemeralSequential))
			c2.Conn.Close()
			e.Target.Settle()
			e.C.Barrier()
			name, _ := seqCreate(e, "e-", task.EphemeralSequential)
			e.Eq(name, e.P("e-0000000001"), "name")
		}},
		{"multi/invalid-acl", "a create with an empty ACL inside a multi fails that op with InvalidACL", func(e *Env) {
			r := multi(e, create(e.P("a"), task.Persistent), &task.CreateRequest{Path: e.P("b")})
			failedAt(e, r, 2, 1, task.ErrInvalidACL)
		}},
		{"multi/create-exists", "a multi create of an existing node fails with NodeExists", func(e *Env) {
			e.Mk("a")
			failedAt(e, multi(e, create(e.P("a"), task.Persistent)), 1, 0, task.ErrNodeExists)
		}},
		{"multi/set-missing", "a multi set of a missing node fails with NoNode", func(e *Env) {
			failedAt(e, multi(e, setOp(e.P("nope"), -1)), 1, 0, task.ErrNoNode)
		}},
		{"multi/set-result-stat", "a multi set's result carries the node's new Stat", func(e *Env) {
			e.Mk("a")
			r := multi(e, setOp(e.P("a"), 0))
			e.Err(r.Err, nil, "multi")
			if len(r.Results) == 1 {
				e.Eq(r.Results[0].Stat.Version, int32(1), "version")
				e.Eq(r.Results[0].Stat, e.Stat(e.P("a")), "stat")
			}
		}},
		{"errors/delete-special-zookeeper-quota", "delete /zookeeper/quota is refused with BadArguments", func(e *Env) {
			e.Err(e.C.Do(&task.DeleteRequest{Path: "/zookeeper/quota", Version: -1}).Err, task.ErrBadArguments, "delete")
		}},
		{"errors/sync-root", "sync of / answers with /", func(e *Env) {
			r := e.C.Do(&task.SyncRequest{Path: "/"})
			e.Err(r.Err, nil, "sync")
			e.Eq(r.Path, "/", "path")
		}},
		{"watch/own-notification-before-reply", "a session receives the notification its own write triggered before that write's reply (FinalRequestProcessor applies, notifying, then replies)", func(e *Env) {
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			p := e.C.Send(&task.SetDataRequest{Path: e.P("a"), Version: -1})
			p.Wait()
			w.Wait()
			e.True(w.FiredAt() < p.At(), "watch at %d, reply at %d", w.FiredAt(), p.At())
		}},
		{"watch/others-notified-before-later-reply", "a watching session gets the notification before the reply to any later request of its own", func(e *Env) {
			e.Mk("a")
			_, w := getW(e.C, e.P("a"))
			c2 := e.NewClient()
			c2.Do(&task.SetDataRequest{Path: e.P("a"), Version: -1})
			p := e.C.Send(&task.ExistsRequest{Path: e.P("a")})
			p.Wait()
			e.True(w.FiredAt() != 0 && w.FiredAt() < p.At(), "watch at %d, later reply at %d", w.FiredAt(), p.At())
		}},
		{"watch/exists-existing-then-recreated", "an exists watch fires NodeDeleted on delete; a recreate later is not seen by that spent watch", func(e *Env) {
			e.Mk("a")
			_, w := existsW(e.C, e.P("a"))
			e.Delete(e.P("a"))
			e.Mk("a")
			e.OneEvent(e.C, w, task.EventNodeDeleted, e.P("a"))
		}},
	}
}

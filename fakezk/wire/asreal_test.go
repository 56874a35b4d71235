package wire_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// sameAsReal runs script against a real 3.8 server and against the wire
// fake, each on a fresh server, and fails on every line of its
// transcript that differs.
func sameAsReal(t *testing.T, script func(r *rig) []string) {
	t.Helper()
	sameAsRealWith(t, zkserver.Options{}, fakezk.Config{}, script)
}

// sameAsRealWith is sameAsReal with the real server's options and the
// fake's configuration (a tick of a second unless they set one).
func sameAsRealWith(t *testing.T, opts zkserver.Options, cfg fakezk.Config, script func(r *rig) []string) {
	t.Helper()
	if opts.TickTime == 0 {
		opts.TickTime = time.Second
	}
	if cfg.TickTime == 0 {
		cfg.TickTime = time.Second
	}
	real := zkserver.Standalone(t, opts)
	fake := start(t, cfg)
	want, got := script(&rig{addr: real.Addrs()[0]}), script(&rig{addr: fake.addr})
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("line %d\n real %s\n fake %s", i, w, g)
		}
	}
}

// A delete's path is checked as a 3.8.0 server checks it
// (getParentPathAndValidate): no "/", a NUL, or a special path is
// BadArguments; any other path no node has ("/w/", "/w//x", "/w/.") is
// NoNode, alone or in a multi, where setData and check validate the whole
// path (BadArguments). The fake answered BadArguments to them all before.
func TestDeletePathsAsTheRealServer(t *testing.T) {
	sameAsReal(t, func(r *rig) (lines []string) {
		c := r.rawConn(t)
		c.session(20 * time.Second)
		h0, _, _ := c.call(wire.Request{Op: wire.OpCreate, Path: "/w", ACL: task.OpenACL})
		base := h0.Zxid
		for _, req := range []wire.Request{
			{Op: wire.OpDelete, Path: "/w/", Version: -1},
			{Op: wire.OpDelete, Path: "/w//x", Version: -1},
			{Op: wire.OpDelete, Path: "/w/.", Version: -1},
			{Op: wire.OpDelete, Path: "/nope/", Version: -1},
			{Op: wire.OpDelete, Path: "/zookeeper/", Version: -1},
			{Op: wire.OpDelete, Path: "bad", Version: -1},
			{Op: wire.OpDelete, Path: "/w/\x01", Version: -1},
			{Op: wire.OpMulti, Ops: []wire.Request{{Op: wire.OpDelete, Path: "/w/", Version: -1}}},
			{Op: wire.OpSetData, Path: "/w/", Version: -1},
			{Op: wire.OpMulti, Ops: []wire.Request{{Op: wire.OpCheck, Path: "/w/", Version: -1}}},
		} {
			h, body, _ := c.call(req)
			lines = append(lines, fmt.Sprintf("op %d %q: err %d zxid+%d body %x", req.Op, req.Path, h.Err, h.Zxid-base, body))
		}
		return lines
	})
}

// checkWatches answers for any session's watch on the path, as a 3.8.0
// server does (WatchManager.containsWatcher looks at the path's
// watchers): session B asks about the data watch session A set, and about
// the child watch it set itself on another path. The fake answered only
// for the asking session's watches (NoWatcher to B's first question)
// before.
func TestCheckWatchesAsTheRealServer(t *testing.T) {
	sameAsReal(t, func(r *rig) (lines []string) {
		a, b := r.rawConn(t), r.rawConn(t)
		a.session(20 * time.Second)
		b.session(20 * time.Second)
		a.call(wire.Request{Op: wire.OpCreate, Path: "/r", ACL: task.OpenACL})
		a.call(wire.Request{Op: wire.OpCreate, Path: "/r/a", ACL: task.OpenACL})
		a.call(wire.Request{Op: wire.OpGetData, Path: "/r/a", Watch: true})
		b.call(wire.Request{Op: wire.OpGetChildren, Path: "/r", Watch: true})
		for _, q := range []struct {
			c    *raw
			who  string
			path string
			typ  task.WatcherType
		}{
			{b, "b", "/r/a", task.WatcherData},
			{b, "b", "/r/a", task.WatcherAny},
			{b, "b", "/r/a", task.WatcherChildren},
			{a, "a", "/r", task.WatcherChildren},
			{a, "a", "/r", task.WatcherData},
			{a, "a", "/none", task.WatcherAny},
		} {
			h, _, _ := q.c.call(wire.Request{Op: wire.OpCheckWatches, Path: q.path, Mode: int32(q.typ)})
			lines = append(lines, fmt.Sprintf("%s checkWatches %s %v: err %d", q.who, q.path, q.typ, h.Err))
		}
		return lines
	})
}

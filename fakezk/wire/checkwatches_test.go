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

// checkWatches answers for any session's watch on the path, as a 3.8.0
// server does (WatchManager.containsWatcher looks at the path's
// watchers): session B asks about the data watch session A set, and about
// the child watch it set itself on another path. The fake answered only
// for the asking session's watches (NoWatcher to B's first question)
// before.
func TestCheckWatchesAsTheRealServer(t *testing.T) {
	real := zkserver.Standalone(t, zkserver.Options{TickTime: time.Second})
	fake := start(t, fakezk.Config{TickTime: time.Second})
	got := map[string][]string{}
	for name, addr := range map[string]string{"real": real.Addrs()[0], "fake": fake.addr} {
		r := &rig{addr: addr}
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
			got[name] = append(got[name], fmt.Sprintf("%s checkWatches %s %v: err %d", q.who, q.path, q.typ, h.Err))
		}
	}
	for i := range got["real"] {
		if got["real"][i] != got["fake"][i] {
			t.Errorf("real %s\n fake %s", got["real"][i], got["fake"][i])
		}
	}
}

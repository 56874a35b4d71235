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

// A delete's path is checked as a 3.8.0 server checks it
// (getParentPathAndValidate): no "/", a NUL, or a special path is
// BadArguments; any other path no node has ("/w/", "/w//x", "/w/.") is
// NoNode, alone or in a multi, where setData and check validate the whole
// path (BadArguments). The fake answered BadArguments to them all before.
func TestDeletePathsAsTheRealServer(t *testing.T) {
	real := zkserver.Standalone(t, zkserver.Options{TickTime: time.Second})
	fake := start(t, fakezk.Config{TickTime: time.Second})
	got := map[string][]string{}
	for name, addr := range map[string]string{"real": real.Addrs()[0], "fake": fake.addr} {
		r := &rig{addr: addr}
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
			got[name] = append(got[name], fmt.Sprintf("op %d %q: err %d zxid+%d body %x", req.Op, req.Path, h.Err, h.Zxid-base, body))
		}
	}
	for i := range got["real"] {
		if got["real"][i] != got["fake"][i] {
			t.Errorf("real %s\n fake %s", got["real"][i], got["fake"][i])
		}
	}
}

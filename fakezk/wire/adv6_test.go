package wire_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
)

// Package doc: "Package wire serves ZooKeeper's client protocol, as a
// 3.8.0 server speaks it". The answers below are Debian's 3.8.0 own,
// captured through zkserver.Standalone with the same raw requests:
//
//   - multiRead holding a check: MultiOperationRecord.deserialize throws
//     "Mixing different kind of ops"; FinalRequestProcessor answers
//     MarshallingError (-5) with no body, the connection stays.
//   - multiRead holding a create: FinalRequestProcessor throws "Invalid
//     type of readOp" after it made an empty MultiResponse: -5 and that
//     empty response (ffffffff01ffffffff); nothing is created.
//   - multi holding a getData: PrepRequestProcessor "unknown type 4", the
//     txn is null: -5, no body (not Unimplemented, -6).
//
// The fake answers err 0 with an ErrorResult BadArguments (-8) per op for
// the first two and Unimplemented for the third.
func TestAdv6MultiAndMultiReadWithForeignOps(t *testing.T) {
	r := start(t, fakezk.Config{TickTime: time.Second})
	c := r.rawConn(t)
	c.session(20 * time.Second)
	if h, _, _ := c.call(wire.Request{Op: wire.OpCreate, Path: "/a", ACL: task.OpenACL}); h.Err != 0 {
		t.Fatalf("create: %+v", h)
	}
	cases := []struct {
		name string
		req  wire.Request
		body []byte
	}{
		{"multiRead with check", wire.Request{Op: wire.OpMultiRead, Ops: []wire.Request{
			{Op: wire.OpGetData, Path: "/a"}, {Op: wire.OpCheck, Path: "/a", Version: -1}}}, nil},
		{"multiRead with create", wire.Request{Op: wire.OpMultiRead, Ops: []wire.Request{
			{Op: wire.OpCreate, Path: "/mr", ACL: task.OpenACL}}}, []byte{0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff}},
		{"multi with getData", wire.Request{Op: wire.OpMulti, Ops: []wire.Request{
			{Op: wire.OpGetData, Path: "/a"}}}, nil},
	}
	for _, tc := range cases {
		h, body, _ := c.call(tc.req)
		if h.Err != int32(task.CodeMarshallingError) || !bytes.Equal(body, tc.body) {
			t.Errorf("%s: err %d body %x; 3.8.0 answers err -5 body %x", tc.name, h.Err, body, tc.body)
		}
	}
	// The connection stays, and nothing was created.
	if h, _, _ := c.call(wire.Request{Op: wire.OpExists, Path: "/mr"}); h.Err != int32(task.CodeNoNode) {
		t.Errorf("exists /mr after the multiRead: err %d, want NoNode", h.Err)
	}
}

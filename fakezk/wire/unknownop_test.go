package wire_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
)

// unknownOps are opcodes a 3.8.0 server does not know (Request.isValid
// refuses them): 0 (notification), 10 and 23 (no op), -1 (the error
// type of a multi result), 999.
var unknownOps = []wire.Op{0, 10, 23, -1, 999}

// An opcode a 3.8.0 server does not know is answered Unimplemented with
// zxid -1 (UnimplementedRequestProcessor: the request's own zxid, none)
// and then the connection closes (its sendCloseSession); the session
// lives on and its client resumes it. The fake answered Unimplemented
// with the server's zxid and kept the connection, which PROTOCOL.md
// claimed of the real server: TestAgainstRealServer sends its unknown op
// last, before closeSession, whose step takes a closed connection.
func TestUnknownOpcodeAsTheRealServer(t *testing.T) {
	sameAsReal(t, func(r *rig) (lines []string) {
		for _, op := range unknownOps {
			lines = append(lines, unknownOpLine(t, r, op))
		}
		return lines
	})
}

// TestUnknownOpcodeClosesTheConnection pins the same on the fake alone
// (no real server needed): the reply, then the close, the session kept.
func TestUnknownOpcodeClosesTheConnection(t *testing.T) {
	r := start(t, fakezk.Config{TickTime: time.Second})
	for _, op := range unknownOps {
		if got, want := unknownOpLine(t, r, op), fmt.Sprintf("op %d: xid 5 err -6 zxid -1, then closed true, session resumed true", op); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

func unknownOpLine(t *testing.T, r *rig, op wire.Op) string {
	t.Helper()
	c := r.rawConn(t)
	s := c.session(20 * time.Second)
	c.write((&wire.Request{Xid: 5, Op: op}).Encode(nil))
	b, err := c.read()
	if err != nil {
		return fmt.Sprintf("op %d: no reply: %v", op, err)
	}
	h, _, _ := wire.DecodeReplyHeader(b)
	// A bound, not an order: the close follows the reply at once.
	c.nc.SetReadDeadline(time.Now().Add(time.Second))
	closed := c.closed()
	d := r.rawConn(t)
	resp, err := d.connect(wire.ConnectRequest{TimeOut: 20000, SessionID: s.SessionID, Passwd: s.Passwd})
	resumed := err == nil && resp.SessionID == s.SessionID
	if resumed {
		d.call(wire.Request{Op: wire.OpCloseSession})
	}
	return fmt.Sprintf("op %d: xid %d err %d zxid %d, then closed %v, session resumed %v", op, h.Xid, h.Err, h.Zxid, closed, resumed)
}

// What a server writes after the handshake is input the Conn must
// survive: frames no ZooKeeper sends end the connection (the session
// resumes on the next one), and nothing the server writes is taken for a
// change of the client's own session state.

package zkadapter

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
)

// fakeSessionID is the session every fakeServer connection grants.
const fakeSessionID = 0x1234

// fakeServer accepts connections and, on each, grants (or resumes)
// session fakeSessionID with a timeout of 4s, then writes after(n), the
// frames (bodies, without their length) that connection n (from 1)
// starts with, and answers pings and getData requests (no data, a zero
// Stat) until the client goes. Whatever else the client sends gets an
// empty reply.
func fakeServer(t *testing.T, after func(n int) [][]byte) string {
	return fakeServerAnswering(t, after, func(xid, op int32) []byte {
		r := replyHeader(xid, 1, 0)
		if op == opGetData {
			r = binary.BigEndian.AppendUint32(r, 0xffffffff) // data: none
			r = append(r, make([]byte, statSize)...)
		}
		return r
	})
}

// fakeServerAnswering is fakeServer with answer making the reply (body,
// without its length) to each request but pings.
func fakeServerAnswering(t *testing.T, after func(n int) [][]byte, answer func(xid, op int32) []byte) string {
	var conns atomic.Int32
	return acceptEach(t, listen(t), func(nc net.Conn) {
		n := int(conns.Add(1))
		go func() {
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := readFrame(nc); err != nil {
				return
			}
			b := binary.BigEndian.AppendUint32(nil, 0) // protocolVersion
			b = binary.BigEndian.AppendUint32(b, 4000) // timeOut
			b = binary.BigEndian.AppendUint64(b, fakeSessionID)
			b = binary.BigEndian.AppendUint32(b, 16)      // passwd length
			b = append(b, bytes.Repeat([]byte{7}, 16)...) // passwd
			if writeFrame(nc, b) != nil {
				return
			}
			for _, f := range after(n) {
				if _, err := nc.Write(f); err != nil {
					return
				}
			}
			for {
				req, err := readFrame(nc)
				if err != nil || len(req) < 8 {
					return
				}
				xid, op := int32(binary.BigEndian.Uint32(req)), int32(binary.BigEndian.Uint32(req[4:]))
				r := replyHeader(xid, 1, 0)
				if xid != -2 {
					r = answer(xid, op)
				}
				if writeFrame(nc, r) != nil {
					return
				}
			}
		}()
	})
}

// replyHeader is a reply's header: xid, zxid, err.
func replyHeader(xid int32, zxid int64, code int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

// frame is b with its length before it, as it goes on the wire.
func frame(b []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...) }

// wireChildEnv marks the child process of a test whose failure was a
// crash of the process.
const wireChildEnv = "ZKADAPTER_WIRE_CHILD"

// "Close returns within about a second whatever the servers do", and a
// server that answers as no ZooKeeper does costs an attempt, not the
// process (ErrNotZooKeeper, checked for the connect response): the
// session resumes on the next connection. After the handshake a frame
// shorter than a reply header (16 bytes: xid, zxid, err) took the process
// down: go-zookeeper's receive loop slices its body from byte 16 to the
// frame's end, a panic on its goroutine when the frame is a notification
// (xid -1) or the reply of a pending request. The Conn now reads such a
// frame as the end of the connection. Runs in a child process: the
// failure was a panic on a goroutine of go-zookeeper.
func TestFrameShorterThanAReplyHeaderEndsTheConnection(t *testing.T) {
	if os.Getenv(wireChildEnv) != "" {
		shortFrameChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFrameShorterThanAReplyHeaderEndsTheConnection$", "-test.count=1")
	cmd.Env = append(os.Environ(), wireChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("a server's frame of 8 bytes after the handshake crashed the client process (%v):\n%s", err, lastLines(out, 25))
	}
}

func shortFrameChild(t *testing.T) {
	addr := fakeServer(t, func(n int) [][]byte {
		if n > 1 {
			return nil
		}
		// A notification's xid, then 4 bytes: no reply header.
		return [][]byte{frame(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 0xffffffff), 0))}
	})
	c, r := open(t, Config{Servers: []string{addr}, SessionTimeout: 4 * time.Second})
	_, si := r.waitState(t, 0, task.StateSuspended, 5*time.Second)
	ev, _ := r.waitState(t, si, task.StateConnected, 5*time.Second)
	if ev.SessionID != fakeSessionID {
		t.Fatalf("session %#x after the short frame, want %#x resumed", ev.SessionID, fakeSessionID)
	}
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/x"}, nil))
}

// "Every session change is reported, in order", StateExpired means the
// session is gone (PROTOCOL.md: "the session ends only when a server says
// so", at the handshake), and a request "never sent" gets ErrNotSent. A
// notification (xid -1) whose type is None (-1) and whose state is Expired
// or Disconnected, written by the server on a live connection, was taken
// for go-zookeeper's own session state: the Conn reported StateExpired
// (or StateSuspended) for a session that was alive on a connection that
// still served, completed the requests in flight with ErrSessionExpired
// (ErrNotSent for those not yet written, which go-zookeeper then wrote:
// "not sent" and applied), and failed every later Do with ErrNotSent for
// as long as the connection lasted: nothing would report the session
// usable again (fixed in session.go: a session event that names no server
// is a notification, not a state of the client's).
func TestNotificationOfTypeNoneIsNoSessionChange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state int32
	}{
		{"Expired", -112},
		{"Disconnected", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeServer(t, func(int) [][]byte {
				b := replyHeader(-1, -1, 0)
				b = binary.BigEndian.AppendUint32(b, 0xffffffff) // type None
				b = binary.BigEndian.AppendUint32(b, uint32(tc.state))
				b = binary.BigEndian.AppendUint32(b, 0) // path ""
				return [][]byte{frame(b)}
			})
			c, r := open(t, Config{Servers: []string{addr}, SessionTimeout: 4 * time.Second})
			// The notification comes before the reply on the wire: once
			// the reply is in, it has been read.
			resp := do(t, c, r, &task.GetDataRequest{Path: "/x"}, nil)
			evs := r.sessionEvents()
			if resp.Err != nil || len(evs) != 1 || evs[0].State != task.StateConnected {
				t.Fatalf("after a notification of type None, state %d: getData %v, session events %v; want the reply and [Connected] alone",
					tc.state, resp.Err, evs)
			}
			// And the Conn still serves.
			if resp := do(t, c, r, &task.GetDataRequest{Path: "/y"}, nil); resp.Err != nil {
				t.Fatalf("getData after the notification: %v", resp.Err)
			}
		})
	}
}

// "Server codes become task's Codes, which keep unknown codes' numbers";
// task.ErrClosed is for "requests pending at Close". A reply with code
// -116 (ZCLOSING in ZooKeeper's C client; no ZooKeeper server code) is
// go-zookeeper's ErrClosing, which the Conn mapped to task.ErrClosed as if
// it flushed its own requests at Close (which go-zookeeper never reports
// through a reply: the Conn completes those itself): a live Conn told the
// runtime it was closed (fixed in errors.go: the code keeps its number).
func TestServerCodeClosingKeepsItsNumber(t *testing.T) {
	addr := fakeServerAnswering(t, func(int) [][]byte { return nil }, func(xid, op int32) []byte {
		return replyHeader(xid, 1, -116)
	})
	c, r := open(t, Config{Servers: []string{addr}, SessionTimeout: 4 * time.Second})
	resp := do(t, c, r, &task.GetDataRequest{Path: "/x"}, nil)
	if resp.Err != task.Code(-116) {
		t.Fatalf("getData answered with code -116: %v (%#v), want task.Code(-116)", resp.Err, resp.Err)
	}
}

// Errors: "bad paths, modes and sizes are refused before sending
// (... task.ErrDataTooLarge ...)", and "a request in flight when the
// connection drops gets task.ErrConnectionLoss (outcome unknown)". A reply
// whose header carries no error but whose body does not decode (here a
// create2 reply with no body: no ZooKeeper 3.5+ sends one) is go-zookeeper's
// ErrShortBuffer, which the Conn mapped to task.ErrDataTooLarge as for a
// request its encode buffer could not hold: a create the server had
// answered, so applied, was reported refused before sending. The runtime
// then counts it as never made (an ephemeral sequential node nobody
// knows of). Fixed in do.go: a reply that does not decode has an unknown
// outcome, task.ErrConnectionLoss.
func TestUndecodableReplyIsOutcomeUnknown(t *testing.T) {
	addr := fakeServerAnswering(t, func(int) [][]byte { return nil }, func(xid, op int32) []byte {
		return replyHeader(xid, 1, 0) // and no body, whatever the request
	})
	c, r := open(t, Config{Servers: []string{addr}, SessionTimeout: 4 * time.Second})
	for _, req := range []task.Request{
		&task.CreateRequest{Path: "/lock-", Mode: task.EphemeralSequential, ACL: task.OpenACL},
		&task.SetDataRequest{Path: "/x", Data: []byte("v"), Version: -1},
		&task.GetDataRequest{Path: "/x"},
	} {
		if resp := do(t, c, r, req, nil); resp.Err != task.ErrConnectionLoss {
			t.Errorf("%s answered with a reply that does not decode: %v, want task.ErrConnectionLoss (sent, outcome unknown)", req.OpName(), resp.Err)
		}
	}
}

package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
)

// raw is a client written with the package's own codec, for the requests
// go-zookeeper cannot send and the handshake's corners.
type raw struct {
	t   *testing.T
	nc  net.Conn
	xid int32
}

func (r *rig) rawConn(t *testing.T) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second)) // a bound, not an order
	return &raw{t: t, nc: nc}
}

func (c *raw) write(payload []byte) {
	c.t.Helper()
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	if _, err := c.nc.Write(append(b, payload...)); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next frame's payload, or the error (io.EOF: closed).
func (c *raw) read() ([]byte, error) { return wire.ReadFrame(c.nc, 1<<21, nil) }

func (c *raw) connect(req wire.ConnectRequest) (wire.ConnectResponse, error) {
	c.t.Helper()
	c.write(req.Encode(nil))
	b, err := c.read()
	if err != nil {
		return wire.ConnectResponse{}, err
	}
	return wire.DecodeConnectResponse(b)
}

func (c *raw) session(timeout time.Duration) wire.ConnectResponse {
	c.t.Helper()
	resp, err := c.connect(wire.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), Passwd: make([]byte, 16), HasReadOnly: true})
	if err != nil || resp.SessionID == 0 {
		c.t.Fatalf("connect: %+v %v", resp, err)
	}
	return resp
}

// call sends req and returns the reply to it, skipping notifications
// (returned apart).
func (c *raw) call(req wire.Request) (wire.ReplyHeader, []byte, [][]byte) {
	c.t.Helper()
	c.xid++
	req.Xid = c.xid
	c.write(req.Encode(nil))
	var notes [][]byte
	for {
		b, err := c.read()
		if err != nil {
			c.t.Fatalf("reading the reply to op %d: %v", req.Op, err)
		}
		h, body, err := wire.DecodeReplyHeader(b)
		if err != nil {
			c.t.Fatal(err)
		}
		if h.Xid == wire.XidNotification {
			notes = append(notes, body)
			continue
		}
		if h.Xid != req.Xid {
			c.t.Fatalf("reply xid %d to request %d", h.Xid, req.Xid)
		}
		return h, body, notes
	}
}

// closed reports whether the server closed the connection with nothing
// more to read (EOF, or a reset if it closed with input unread).
func (c *raw) closed() bool {
	_, err := c.read()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func be32(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

// TestHandshake checks the connect response's shape and values.
func TestHandshake(t *testing.T) {
	r := start(t, fakezk.Config{TickTime: time.Second})
	for _, tc := range []struct {
		name     string
		asked    time.Duration
		readOnly bool
		want     time.Duration
	}{
		{"readOnly byte, clamped up to 2 ticks", 500 * time.Millisecond, true, 2 * time.Second},
		{"no readOnly byte, clamped down to 20 ticks", time.Minute, false, 20 * time.Second},
		{"within bounds", 5 * time.Second, true, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := r.rawConn(t)
			c.write((&wire.ConnectRequest{TimeOut: int32(tc.asked / time.Millisecond), Passwd: make([]byte, 16), HasReadOnly: tc.readOnly}).Encode(nil))
			b, err := c.read()
			if err != nil {
				t.Fatal(err)
			}
			if want := 36 + map[bool]int{true: 1}[tc.readOnly]; len(b) != want {
				t.Fatalf("connect response of %d bytes, want %d", len(b), want)
			}
			resp, err := wire.DecodeConnectResponse(b)
			if err != nil || resp.SessionID == 0 || time.Duration(resp.TimeOut)*time.Millisecond != tc.want || !bytes.Equal(resp.Passwd, wire.Password(resp.SessionID)) {
				t.Fatalf("%+v %v", resp, err)
			}
		})
	}
}

// TestResumeAndRefusals: a session resumed with its password on a new
// connection keeps its ephemeral; a wrong password or an unknown session
// gets session 0 and a closed connection; a client that saw a later zxid
// is closed with no response.
func TestResumeAndRefusals(t *testing.T) {
	r := start(t, fakezk.Config{})
	c := r.rawConn(t)
	s := c.session(time.Second)
	if h, _, _ := c.call(wire.Request{Op: wire.OpCreate, Path: "/e", ACL: task.OpenACL, Flags: 1}); h.Err != 0 {
		t.Fatalf("create: %d", h.Err)
	}
	c.nc.Close()

	c2 := r.rawConn(t)
	resp, err := c2.connect(wire.ConnectRequest{TimeOut: 1000, SessionID: s.SessionID, Passwd: s.Passwd, LastZxidSeen: r.zk.Zxid()})
	if err != nil || resp.SessionID != s.SessionID {
		t.Fatalf("resume: %+v %v", resp, err)
	}
	if h, body, _ := c2.call(wire.Request{Op: wire.OpExists, Path: "/e"}); h.Err != 0 || len(body) != 68 {
		t.Fatalf("the ephemeral after a resume: %d, %d bytes", h.Err, len(body))
	}

	bad := r.rawConn(t)
	resp, err = bad.connect(wire.ConnectRequest{TimeOut: 1000, SessionID: s.SessionID, Passwd: make([]byte, 16)})
	if err != nil || resp.SessionID != 0 || resp.TimeOut != 0 || !bytes.Equal(resp.Passwd, make([]byte, 16)) || !bad.closed() {
		t.Fatalf("wrong password: %+v %v", resp, err)
	}
	unknown := r.rawConn(t)
	resp, err = unknown.connect(wire.ConnectRequest{TimeOut: 1000, SessionID: 12345, Passwd: wire.Password(12345)})
	if err != nil || resp.SessionID != 0 || !unknown.closed() {
		t.Fatalf("unknown session: %+v %v", resp, err)
	}
	ahead := r.rawConn(t)
	if _, err := ahead.connect(wire.ConnectRequest{TimeOut: 1000, LastZxidSeen: r.zk.Zxid() + 1, Passwd: make([]byte, 16)}); !errors.Is(err, io.EOF) {
		t.Fatalf("a client ahead of the server: %v", err)
	}
}

// TestFrameLimit: a frame over jute.maxbuffer closes that connection; the
// others go on.
func TestFrameLimit(t *testing.T) {
	r := start(t, fakezk.Config{})
	good := r.rawConn(t)
	good.session(time.Second)
	big := r.rawConn(t)
	big.session(time.Second)
	big.nc.Write(binary.BigEndian.AppendUint32(nil, wire.DefaultMaxFrame+1))
	if !big.closed() {
		t.Fatal("an oversized frame left its connection open")
	}
	if h, _, _ := good.call(wire.Request{Op: wire.OpExists, Path: "/"}); h.Err != 0 {
		t.Fatalf("the other connection: %d", h.Err)
	}
}

// TestOtherOps covers what go-zookeeper cannot send: create2, whoAmI,
// getEphemerals, getAllChildrenNumber, addWatch, checkWatches,
// removeWatches, multiRead, setWatches2, an unknown opcode, a failing
// standalone check, close.
func TestOtherOps(t *testing.T) {
	r := start(t, fakezk.Config{})
	c := r.rawConn(t)
	c.session(time.Second)

	h, body, _ := c.call(wire.Request{Op: wire.OpCreate2, Path: "/p", Data: []byte("d"), ACL: task.OpenACL})
	if h.Err != 0 || len(body) != 4+2+68 || h.Zxid != r.zk.Zxid() {
		t.Fatalf("create2: %+v, %d bytes", h, len(body))
	}
	c.call(wire.Request{Op: wire.OpCreate, Path: "/p/e1", ACL: task.OpenACL, Flags: 1})
	c.call(wire.Request{Op: wire.OpCreate, Path: "/p/e2", ACL: task.OpenACL, Flags: 1})
	if h, body, _ = c.call(wire.Request{Op: wire.OpGetEphemerals, Path: "/p/e2"}); h.Err != 0 || be32(body) != 1 {
		t.Fatalf("getEphemerals: %+v %x", h, body)
	}
	if h, body, _ = c.call(wire.Request{Op: wire.OpAllChildrenCount, Path: "/"}); h.Err != 0 || be32(body) != 6 {
		t.Fatalf("getAllChildrenNumber of /: %+v %x (want 6: 3 /zookeeper nodes, /p and 2 below)", h, body)
	}
	if h, _, _ = c.call(wire.Request{Op: wire.OpAllChildrenCount, Path: "/nope"}); h.Err != int32(task.CodeNoNode) {
		t.Fatalf("getAllChildrenNumber of a missing node: %+v", h)
	}
	c.call(wire.Request{Op: wire.OpAuth, Scheme: "digest", Auth: []byte("u:p")})
	if h, body, _ = c.call(wire.Request{Op: wire.OpWhoAmI}); h.Err != 0 || be32(body) != 2 ||
		!bytes.HasSuffix(body, []byte("\x00\x00\x00\x06digest\x00\x00\x00\x01u")) || !bytes.Contains(body, []byte("127.0.0.1")) {
		t.Fatalf("whoAmI: %+v %q", h, body)
	}

	// A persistent recursive watch: checkWatches finds it, a change below
	// fires it (twice: it stays), removeWatches takes it away.
	if h, _, _ = c.call(wire.Request{Op: wire.OpAddWatch, Path: "/p", Mode: 1}); h.Err != 0 {
		t.Fatalf("addWatch: %+v", h)
	}
	if h, _, _ = c.call(wire.Request{Op: wire.OpCheckWatches, Path: "/p", Mode: int32(task.WatcherAny)}); h.Err != 0 {
		t.Fatalf("checkWatches: %+v", h)
	}
	for i := range 2 {
		_, _, notes := c.call(wire.Request{Op: wire.OpSetData, Path: "/p/e1", Version: -1})
		if len(notes) != 1 || be32(notes[0]) != int32(task.EventNodeDataChanged) {
			t.Fatalf("set %d: notifications %x", i, notes)
		}
	}
	if h, _, _ = c.call(wire.Request{Op: wire.OpRemoveWatches, Path: "/p", Mode: int32(task.WatcherAny)}); h.Err != 0 {
		t.Fatalf("removeWatches: %+v", h)
	}
	if h, _, _ = c.call(wire.Request{Op: wire.OpCheckWatches, Path: "/p", Mode: int32(task.WatcherAny)}); h.Err != int32(task.CodeNoWatcher) {
		t.Fatalf("checkWatches after removal: %+v", h)
	}

	// multiRead: each op its own result.
	h, body, _ = c.call(wire.Request{Op: wire.OpMultiRead, Ops: []wire.Request{{Op: wire.OpGetData, Path: "/p"}, {Op: wire.OpGetChildren, Path: "/nope"}}})
	if h.Err != 0 || be32(body) != int32(wire.OpGetData) || be32(body[4+1+4+4+1+68:]) != int32(wire.OpError) {
		t.Fatalf("multiRead: %+v %x", h, body)
	}

	// setWatches2: a data watch on a node changed since relativeZxid fires
	// at once.
	z := r.zk.Zxid()
	c.call(wire.Request{Op: wire.OpSetData, Path: "/p", Version: -1})
	_, _, notes := c.call(wire.Request{Op: wire.OpSetWatches2, RelativeZxid: z, DataWatches: []string{"/p"}, ExistWatches: []string{"/q"}})
	if len(notes) != 1 || be32(notes[0]) != int32(task.EventNodeDataChanged) {
		t.Fatalf("setWatches2: notifications %x", notes)
	}

	if h, _, _ = c.call(wire.Request{Op: wire.OpCheck, Path: "/p", Version: 7}); h.Err != int32(task.CodeBadVersion) {
		t.Fatalf("standalone check of a wrong version: %+v", h)
	}
	c.write((&wire.Request{Xid: 100, Op: wire.OpCloseSession}).Encode(nil))
	// A reply (err 0, its xid), then the connection closes, as a 3.8.0
	// server does when its threads do not race.
	if b, err := c.read(); err != nil {
		t.Fatalf("close: no reply: %v", err)
	} else if h, _, _ := wire.DecodeReplyHeader(b); h.Xid != 100 || h.Err != 0 {
		t.Fatalf("close: reply %+v, want xid 100, err 0", h)
	}
	if !c.closed() {
		t.Fatal("close: the connection stayed open after the reply")
	}
	if n := len(r.zk.Sessions()); n != 0 {
		t.Fatalf("%d sessions after close", n)
	}

	// An unknown opcode: Unimplemented, then the connection closes, as
	// on 3.8.0 (TestUnknownOpcodeAsTheRealServer).
	u := r.rawConn(t)
	u.session(2 * time.Second)
	if h, _, _ := u.call(wire.Request{Op: 999}); h.Err != int32(task.CodeUnimplemented) {
		t.Fatalf("unknown opcode: %+v", h)
	}
	// A bound below the session timeout (after which a silent client's
	// link closes too): the close follows the reply at once.
	u.nc.SetReadDeadline(time.Now().Add(time.Second))
	if !u.closed() {
		t.Fatal("unknown opcode: the connection stayed open after the reply")
	}
}

// TestFourLetterWords checks ruok, isro and srvr's shape (the lines
// go-zookeeper's FLWSrvr parses), with a fresh server's node count as a
// real 3.8.0 counts it (5: the root twice, /zookeeper and its two nodes).
func TestFourLetterWords(t *testing.T) {
	r := start(t, fakezk.Config{})
	stats, ok := gozk.FLWSrvr([]string{r.addr}, 10*time.Second)
	if !ok || len(stats) != 1 || stats[0].Error != nil || stats[0].NodeCount != 5 || stats[0].Mode != gozk.ModeStandalone {
		t.Fatalf("srvr as go-zookeeper reads it: %+v %v", stats, ok)
	}
	for cmd, want := range map[string]string{"ruok": "imok", "isro": "rw"} {
		c := r.rawConn(t)
		c.nc.Write([]byte(cmd))
		got, _ := io.ReadAll(c.nc)
		if string(got) != want {
			t.Errorf("%s: %q", cmd, got)
		}
	}
}

// wire_req is the connect request that resumes s.
func wire_req(s wire.ConnectResponse) wire.ConnectRequest {
	return wire.ConnectRequest{TimeOut: s.TimeOut, SessionID: s.SessionID, Passwd: s.Passwd}
}

// TestWatchesLeaveWithTheLink: a link's watches leave the server with it,
// as a ServerCnxn's do; the client's setWatches on its next link sets them
// again.
func TestWatchesLeaveWithTheLink(t *testing.T) {
	r := start(t, fakezk.Config{})
	c := r.rawConn(t)
	s := c.session(2 * time.Second)
	c.call(wire.Request{Op: wire.OpCreate, Path: "/w", ACL: task.OpenACL})
	c.call(wire.Request{Op: wire.OpGetData, Path: "/w", Watch: true})
	c.call(wire.Request{Op: wire.OpAddWatch, Path: "/", Mode: 1})
	c.nc.Close()

	c2 := r.rawConn(t)
	if resp, err := c2.connect(wire_req(s)); err != nil || resp.SessionID != s.SessionID {
		t.Fatalf("resume: %+v %v", resp, err)
	}
	for _, typ := range []task.WatcherType{task.WatcherData, task.WatcherAny} {
		if h, _, _ := c2.call(wire.Request{Op: wire.OpCheckWatches, Path: "/w", Mode: int32(typ)}); h.Err != int32(task.CodeNoWatcher) {
			t.Fatalf("checkWatches %v on a new link: %+v", typ, h)
		}
	}
	if _, _, notes := c2.call(wire.Request{Op: wire.OpSetData, Path: "/w", Version: -1}); len(notes) != 0 {
		t.Fatalf("a watch of the old link fired: %x", notes)
	}
	z := r.zk.Zxid()
	c2.call(wire.Request{Op: wire.OpSetWatches, RelativeZxid: z, DataWatches: []string{"/w"}})
	if _, _, notes := c2.call(wire.Request{Op: wire.OpSetData, Path: "/w", Version: -1}); len(notes) != 1 {
		t.Fatalf("the watch set again: notifications %x", notes)
	}
}

// TestOneNotificationPerTrigger: a session holding several watches a
// change concerns (getData, exists, a recursive watch above) gets one
// notification for it, as the server sends one per session; its client
// hands it to every watch.
func TestOneNotificationPerTrigger(t *testing.T) {
	r := start(t, fakezk.Config{})
	c := r.rawConn(t)
	c.session(2 * time.Second)
	c.call(wire.Request{Op: wire.OpCreate, Path: "/w", ACL: task.OpenACL})
	c.call(wire.Request{Op: wire.OpGetData, Path: "/w", Watch: true})
	c.call(wire.Request{Op: wire.OpExists, Path: "/w", Watch: true})
	c.call(wire.Request{Op: wire.OpAddWatch, Path: "/", Mode: 1})
	if _, _, notes := c.call(wire.Request{Op: wire.OpSetData, Path: "/w", Version: -1}); len(notes) != 1 {
		t.Fatalf("notifications %x, want one", notes)
	}
	// Two changes in one multi: two triggers, two notifications for the
	// recursive watch.
	_, _, notes := c.call(wire.Request{Op: wire.OpMulti, Ops: []wire.Request{
		{Op: wire.OpSetData, Path: "/w", Version: -1}, {Op: wire.OpSetData, Path: "/w", Version: -1},
	}})
	if len(notes) != 2 {
		t.Fatalf("notifications %x for two changes, want two", notes)
	}
}

// Empty data is not null: a node created or set with a zero-length buffer
// reads back as one (length 0, what kazoo writes and then decodes), a
// node written with a null buffer (length -1, go-zookeeper's nil) reads
// back null, as a 3.8.0 server keeps them apart.
func TestEmptyDataIsNotNull(t *testing.T) {
	r := start(t, fakezk.Config{})
	c := r.rawConn(t)
	c.session(time.Second)
	length := func(path string) int32 {
		t.Helper()
		h, body, _ := c.call(wire.Request{Op: wire.OpGetData, Path: path})
		if h.Err != 0 || len(body) < 4 {
			t.Fatalf("getData %s: %+v %x", path, h, body)
		}
		return be32(body)
	}
	c.call(wire.Request{Op: wire.OpCreate, Path: "/empty", Data: []byte{}, ACL: task.OpenACL})
	c.call(wire.Request{Op: wire.OpCreate, Path: "/null", ACL: task.OpenACL})
	c.call(wire.Request{Op: wire.OpMulti, Ops: []wire.Request{{Op: wire.OpCreate, Path: "/multi", Data: []byte{}, ACL: task.OpenACL}}})
	if n := length("/empty"); n != 0 {
		t.Errorf("created empty: data length %d, want 0", n)
	}
	if n := length("/null"); n != -1 {
		t.Errorf("created null: data length %d, want -1", n)
	}
	if n := length("/multi"); n != 0 {
		t.Errorf("created empty in a multi: data length %d, want 0", n)
	}
	c.call(wire.Request{Op: wire.OpSetData, Path: "/null", Data: []byte{}, Version: -1})
	c.call(wire.Request{Op: wire.OpSetData, Path: "/empty", Version: -1})
	if n := length("/null"); n != 0 {
		t.Errorf("set empty: data length %d, want 0", n)
	}
	if n := length("/empty"); n != -1 {
		t.Errorf("set null: data length %d, want -1", n)
	}
}

// A client that sends requests and takes none of the replies is closed
// within its session timeout, as one that sends nothing is: the server
// stops reading while a reply cannot go out, and gives the write up after
// the timeout (then the session's own countdown runs).
func TestClientThatDoesNotReadIsClosed(t *testing.T) {
	r := start(t, fakezk.Config{})
	c := r.rawConn(t)
	s := c.session(400 * time.Millisecond)
	big := bytes.Repeat([]byte("x"), 512<<10)
	c.call(wire.Request{Op: wire.OpCreate, Path: "/big", Data: big, ACL: task.OpenACL})
	// 64 replies of 512 KiB: far more than the sockets' buffers hold. The
	// sends stop when the server stops reading; the connection's deadline
	// (rawConn) bounds them.
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range 64 {
			b := (&wire.Request{Xid: int32(10 + i), Op: wire.OpGetData, Path: "/big"}).Encode(nil)
			if _, err := c.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)); err != nil {
				return
			}
		}
	}()
	timeout := time.NewTimer(10 * time.Second) // a bound, not an order
	defer timeout.Stop()
	for {
		select {
		case id := <-r.detached:
			if id != s.SessionID {
				continue
			}
			c.nc.Close()
			<-sent
			return
		case <-timeout.C:
			c.nc.Close()
			<-sent
			t.Fatal("the link of a client that reads nothing was not closed within 10s (timeout 400ms)")
		}
	}
}

// TestRequestOfReplacedLinkNotApplied: a request that a link had read but
// not served when its session resumed on another connection is never
// applied, as a real server stops reading the connection it closes for
// the session's new one; applied, it would land after the new link's
// requests, out of the session's order (a lock contender created after
// its attempt's cleanup had looked for it, left for the session's life).
func TestRequestOfReplacedLinkNotApplied(t *testing.T) {
	held, ended, release, reset := wire.HoldRead(wire.OpCreate, "/late")
	defer reset()
	r := start(t, fakezk.Config{})
	c := r.rawConn(t)
	s := c.session(2 * time.Second)
	late := wire.Request{Xid: 1, Op: wire.OpCreate, Path: "/late", ACL: task.OpenACL}
	c.write(late.Encode(nil))
	<-held // read by the first link, not served

	c2 := r.rawConn(t)
	if resp, err := c2.connect(wire_req(s)); err != nil || resp.SessionID != s.SessionID {
		t.Fatalf("resume: %+v %v", resp, err)
	}
	if h, _, _ := c2.call(wire.Request{Op: wire.OpCreate, Path: "/new", ACL: task.OpenACL}); h.Err != 0 {
		t.Fatalf("create on the new link: %d", h.Err)
	}
	close(release)
	<-ended // the first link's reader has returned
	if h, _, _ := c2.call(wire.Request{Op: wire.OpExists, Path: "/late"}); h.Err != int32(task.CodeNoNode) {
		t.Fatalf("the replaced link's create was applied (exists: err %d), after the new link's requests", h.Err)
	}
	if h, _, _ := c2.call(wire.Request{Op: wire.OpExists, Path: "/new"}); h.Err != 0 {
		t.Fatalf("exists /new: %d", h.Err)
	}
}

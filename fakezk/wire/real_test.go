package wire_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// TestAgainstRealServer sends the same raw requests to fakezk on the wire
// and to Debian's ZooKeeper 3.8.0 (skipped without java and the jars,
// failed with ZK_REQUIRED=1) and compares the replies byte for byte, with
// the Stat fields that depend on time, zxids and session ids masked: the
// handshake in both shapes and the session password, each request type
// (create2, empty and null data, multi failures, multi and multiRead with
// ops of the other kind, whoAmI, getEphemerals, getAllChildrenNumber,
// addWatch, checkWatches, multiRead, setWatches2, unknown ops) and the
// four-letter words' shapes.
func TestAgainstRealServer(t *testing.T) {
	// A one-second tick: the raw client does not ping, and its 20s
	// session must outlive the script on a loaded machine.
	real := zkserver.Standalone(t, zkserver.Options{TickTime: time.Second})
	fake := start(t, fakezk.Config{TickTime: time.Second})
	addrs := map[string]string{"real": real.Addrs()[0], "fake": fake.addr}

	got := map[string][]string{}
	for name, addr := range addrs {
		got[name] = script(t, addr)
	}
	if n := len(got["real"]); n < 45 {
		t.Fatalf("the script ran %d steps", n)
	}
	for i := range max(len(got["real"]), len(got["fake"])) {
		var r, f string
		if i < len(got["real"]) {
			r = got["real"][i]
		}
		if i < len(got["fake"]) {
			f = got["fake"][i]
		}
		if r != f {
			t.Errorf("step %d:\n real %s\n fake %s", i, r, f)
		}
	}
}

// script runs the requests against addr and returns one line per reply.
func script(t *testing.T, addr string) []string {
	r := &rig{addr: addr}
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	// Handshakes: sizes, timeout clamps, the password.
	for _, ro := range []bool{false, true} {
		c := r.rawConn(t)
		c.write((&wire.ConnectRequest{TimeOut: 100, Passwd: make([]byte, 16), HasReadOnly: ro}).Encode(nil))
		b, err := c.read()
		if err != nil {
			t.Fatalf("%s: handshake: %v", addr, err)
		}
		resp, _ := wire.DecodeConnectResponse(b)
		add("connect readOnly=%v: %d bytes, timeout %d, password matches: %v", ro, len(b), resp.TimeOut, bytes.Equal(resp.Passwd, wire.Password(resp.SessionID)))
	}
	bad := r.rawConn(t)
	resp, err := bad.connect(wire.ConnectRequest{TimeOut: 4000, SessionID: 0x7777, Passwd: make([]byte, 16)})
	add("unknown session: %+v %v closed %v", resp, err, bad.closed())

	c := r.rawConn(t)
	s := c.session(20 * time.Second)
	add("timeout %d", s.TimeOut)
	call := func(req wire.Request) {
		h, body, notes := c.call(req)
		add("op %d: err %d, body %x, notes %x", req.Op, h.Err, maskStats(req.Op, body), notes)
	}
	open := task.OpenACL
	call(wire.Request{Op: wire.OpCreate2, Path: "/w", Data: []byte("d"), ACL: open})
	call(wire.Request{Op: wire.OpCreate, Path: "/w/e", ACL: open, Flags: 1})
	call(wire.Request{Op: wire.OpCreate, Path: "/w/s-", ACL: open, Flags: 2})
	call(wire.Request{Op: wire.OpCreate, Path: "bad", ACL: open})
	call(wire.Request{Op: wire.OpCreate, Path: "/w/x", ACL: nil})
	call(wire.Request{Op: wire.OpCreateTTL, Path: "/w/t", ACL: open, Flags: 5, TTL: 1000})
	call(wire.Request{Op: wire.OpCreateContainer, Path: "/w/box", ACL: open, Flags: 4})
	call(wire.Request{Op: wire.OpGetData, Path: "/nope"})
	call(wire.Request{Op: wire.OpExists, Path: "/nope"})
	call(wire.Request{Op: wire.OpSetData, Path: "/w", Data: []byte("e"), Version: 7})
	call(wire.Request{Op: wire.OpDelete, Path: "/w", Version: -1})
	call(wire.Request{Op: wire.OpSync, Path: "/w"})
	call(wire.Request{Op: wire.OpGetACL, Path: "/w"})
	call(wire.Request{Op: wire.OpSetACL, Path: "/w", ACL: open, Version: 3})
	call(wire.Request{Op: wire.OpCheck, Path: "/w", Version: 5})
	// A check that passes gets no reply at all: the next request's
	// reply comes first.
	c.xid++
	c.write((&wire.Request{Xid: c.xid, Op: wire.OpCheck, Path: "/w", Version: -1}).Encode(nil))
	call(wire.Request{Op: wire.OpExists, Path: "/w"})
	call(wire.Request{Op: wire.OpMulti, Ops: []wire.Request{
		{Op: wire.OpCreate, Path: "/m", ACL: open},
		{Op: wire.OpCreate2, Path: "/m2", ACL: open},
		{Op: wire.OpSetData, Path: "/w", Version: 0},
		{Op: wire.OpCheck, Path: "/w", Version: 1},
		{Op: wire.OpDelete, Path: "/m2", Version: 0},
	}})
	call(wire.Request{Op: wire.OpMulti, Ops: []wire.Request{
		{Op: wire.OpCreate, Path: "/n", ACL: open},
		{Op: wire.OpCheck, Path: "/w", Version: 99},
		{Op: wire.OpDelete, Path: "/m", Version: -1},
	}})
	call(wire.Request{Op: wire.OpMulti})
	call(wire.Request{Op: wire.OpMulti, Ops: []wire.Request{
		{Op: wire.OpCreate, Path: "/ok", ACL: open},
		{Op: wire.OpCreate, Path: "bad", ACL: open},
		{Op: wire.OpSetData, Path: "/w", Version: -1},
	}})
	call(wire.Request{Op: wire.OpExists, Path: "/ok"})
	call(wire.Request{Op: wire.OpMultiRead, Ops: []wire.Request{{Op: wire.OpGetData, Path: "/w"}, {Op: wire.OpGetChildren, Path: "/nope"}}})
	// Ops of the other kind: MarshallingError, the connection kept.
	call(wire.Request{Op: wire.OpMultiRead, Ops: []wire.Request{{Op: wire.OpGetData, Path: "/w"}, {Op: wire.OpCheck, Path: "/w", Version: -1}}})
	call(wire.Request{Op: wire.OpMultiRead, Ops: []wire.Request{{Op: wire.OpCreate, Path: "/mr", ACL: open}}})
	call(wire.Request{Op: wire.OpMulti, Ops: []wire.Request{{Op: wire.OpGetData, Path: "/w"}}})
	call(wire.Request{Op: wire.OpExists, Path: "/mr"})
	call(wire.Request{Op: wire.OpGetEphemerals, Path: "/"})
	call(wire.Request{Op: wire.OpGetEphemerals, Path: "/x"})
	call(wire.Request{Op: wire.OpAllChildrenCount, Path: "/w"})
	call(wire.Request{Op: wire.OpAllChildrenCount, Path: "/nope"})
	call(wire.Request{Op: wire.OpAuth, Scheme: "digest", Auth: []byte("u:p")})
	call(wire.Request{Op: wire.OpWhoAmI})
	call(wire.Request{Op: wire.OpAddWatch, Path: "/w", Mode: 0})
	call(wire.Request{Op: wire.OpCheckWatches, Path: "/w", Mode: int32(task.WatcherData)})
	call(wire.Request{Op: wire.OpCheckWatches, Path: "/m", Mode: int32(task.WatcherData)})
	call(wire.Request{Op: wire.OpSetData, Path: "/w", Version: -1})
	call(wire.Request{Op: wire.OpRemoveWatches, Path: "/w", Mode: int32(task.WatcherAny)})
	call(wire.Request{Op: wire.OpRemoveWatches, Path: "/w", Mode: int32(task.WatcherAny)})
	call(wire.Request{Op: wire.OpGetData, Path: "/w", Watch: true})
	call(wire.Request{Op: wire.OpSetWatches2, RelativeZxid: 1, DataWatches: []string{"/w"}, ExistWatches: []string{"/w/e", "/q"}, ChildWatches: []string{"/gone"}})
	call(wire.Request{Op: wire.OpGetData, Path: "/w", Watch: true})
	call(wire.Request{Op: wire.OpExists, Path: "/w", Watch: true})
	call(wire.Request{Op: wire.OpAddWatch, Path: "/", Mode: 1})
	call(wire.Request{Op: wire.OpSetData, Path: "/w", Version: -1})
	call(wire.Request{Op: wire.OpMulti, Ops: []wire.Request{{Op: wire.OpSetData, Path: "/w", Version: -1}, {Op: wire.OpSetData, Path: "/w", Version: -1}}})
	call(wire.Request{Op: wire.OpDelete, Path: "/w/e", Version: -1})
	// Empty data and null data, kept apart.
	call(wire.Request{Op: wire.OpCreate, Path: "/empty", Data: []byte{}, ACL: open})
	call(wire.Request{Op: wire.OpGetData, Path: "/empty"})
	call(wire.Request{Op: wire.OpSetData, Path: "/empty", Version: -1})
	call(wire.Request{Op: wire.OpGetData, Path: "/empty"})
	call(wire.Request{Op: wire.OpSetData, Path: "/empty", Data: []byte{}, Version: -1})
	call(wire.Request{Op: wire.OpGetData, Path: "/empty"})
	call(wire.Request{Op: 999})
	c.xid++
	c.write((&wire.Request{Xid: c.xid, Op: wire.OpCloseSession}).Encode(nil))
	// A 3.8.0 server closes the connection with or without the reply, as
	// its threads race (the session's close against the reply's write):
	// either is one line here, and a reply must be err 0 and then EOF.
	if b, err := c.read(); err != nil {
		add("close: closed")
	} else if h, _, _ := wire.DecodeReplyHeader(b); h.Err == 0 && c.closed() {
		add("close: closed")
	} else {
		add("close: reply err %d, then closed: %v", h.Err, c.closed())
	}

	// An auth packet of a scheme the server does not know: AuthFailed,
	// then the connection closes.
	u := r.rawConn(t)
	u.session(20 * time.Second)
	u.xid = 41
	h, body, _ := u.call(wire.Request{Op: wire.OpAuth, Scheme: "nosuch", Auth: []byte("x")})
	add("unknown scheme: %+v %x, closed %v", h, body, u.closed())

	// cons: the line of a session that sent one getData, its numbers
	// masked but its counts and last operation kept.
	k := r.rawConn(t)
	ks := k.session(20 * time.Second)
	k.xid = 7
	k.call(wire.Request{Op: wire.OpGetData, Path: "/"})
	add("cons: %s", consLine(t, addr, ks.SessionID))

	// Four-letter words: the answer, or the shape of srvr (its keys).
	for _, cmd := range []string{"ruok", "isro", "srvr", "conf", "envi", "mntr"} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write([]byte(cmd))
		b, _ := io.ReadAll(nc)
		nc.Close()
		if cmd != "ruok" && cmd != "isro" {
			sep := map[string]string{"srvr": ":", "conf": "=", "envi": "=", "mntr": "\t"}[cmd]
			var keys []string
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				keys = append(keys, strings.SplitN(line, sep, 2)[0])
			}
			if cmd == "envi" || cmd == "mntr" {
				// The fake gives the first keys of envi and a subset
				// of mntr's: compare those.
				keys = slices.DeleteFunc(keys, func(k string) bool {
					return !slices.Contains([]string{"Environment", "zookeeper.version", "host.name", "java.version", "os.name", "os.arch",
						"zk_version", "zk_server_state", "zk_num_alive_connections", "zk_outstanding_requests", "zk_znode_count",
						"zk_avg_latency", "zk_min_latency", "zk_max_latency", "zk_packets_received", "zk_packets_sent"}, k)
				})
				slices.Sort(keys)
			}
			add("%s keys %q", cmd, keys)
			continue
		}
		add("%s: %q", cmd, b)
	}
	return out
}

// maskStats zeroes the Stat fields that differ between servers for no
// fault of either (zxids, times, owner session): in a body of op, at the
// offsets of its Stats.
func maskStats(op wire.Op, body []byte) []byte {
	b := slices.Clone(body)
	mask := func(at int) {
		if at < 0 || at+68 > len(b) {
			return
		}
		for _, f := range [][2]int{{0, 32}, {48, 56}, {60, 68}} { // czxid..mtime, ephemeralOwner, pzxid
			clear(b[at+f[0] : at+f[1]])
		}
	}
	switch op {
	case wire.OpExists, wire.OpSetData, wire.OpSetACL:
		mask(0)
	case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL, wire.OpGetData, wire.OpGetACL, wire.OpGetChildren2:
		mask(len(b) - 68)
	case wire.OpMulti, wire.OpMultiRead:
		// Stats inside results: mask every 68-byte window after a
		// create2, setData or getData result header.
		for i := 0; i+9 <= len(b); {
			typ, done := be32(b[i:]), b[i+4]
			i += 9
			if done != 0 {
				break
			}
			switch wire.Op(typ) {
			case wire.OpCreate:
				i += 4 + int(be32(b[i:]))
			case wire.OpCreate2:
				i += 4 + int(be32(b[i:]))
				mask(i)
				i += 68
			case wire.OpSetData:
				mask(i)
				i += 68
			case wire.OpGetData:
				if n := be32(b[i:]); n > 0 {
					i += int(n)
				}
				i += 4
				mask(i)
				i += 68
			case wire.OpGetChildren:
				n := int(be32(b[i:]))
				i += 4
				for range n {
					i += 4 + int(be32(b[i:]))
				}
			case wire.OpError:
				i += 4
			}
		}
	}
	return b
}

// consLine asks addr for cons until the line of session sid has settled
// (the connection registered for reading again, interest set [1], no
// request of it queued, and two answers in a row agree: under make
// test's load two answers 10 ms apart once both showed queued=1) and
// returns it with the address, times,
// latencies and ids masked. ZooKeeper counts a reply as sent, and
// registers the connection for reading again, after the client may
// already have read it: a cons asked right after the reply can see sent
// one short and the interest set empty, and under make test's load it
// did so for two answers in a row. The line of an idle session settles,
// so asking (for up to 10 s, every 10 ms, the real server's threads
// running meanwhile) compares the settled lines; a line that never
// settles is returned as it last was, and fails the comparison.
func consLine(t *testing.T, addr string, sid int64) string {
	prev := consOnce(t, addr, sid)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		line := consOnce(t, addr, sid)
		if line == prev && strings.HasPrefix(line, " /ADDR[1](queued=0,") {
			return line
		}
		prev = line
		time.Sleep(10 * time.Millisecond) // a real server's state, polled
	}
	return prev
}

// consOnce asks addr for cons once; see consLine.
func consOnce(t *testing.T, addr string, sid int64) string {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("cons"))
	b, _ := io.ReadAll(nc)
	if !strings.HasSuffix(string(b), "\n\n") {
		return fmt.Sprintf("cons does not end in an empty line: %q", b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, fmt.Sprintf("sid=0x%x,", sid)) {
			continue
		}
		for _, key := range []string{"sid", "est", "lzxid", "lresp", "llat", "minlat", "avglat", "maxlat"} {
			line = regexp.MustCompile(key+`=[0-9a-fx]+`).ReplaceAllString(line, key+"=N")
		}
		return regexp.MustCompile(`^ /[0-9.]+:[0-9]+\[`).ReplaceAllString(line, " /ADDR[")
	}
	return fmt.Sprintf("no line for session 0x%x in %q", sid, b)
}

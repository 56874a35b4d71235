package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// FuzzDecodeRequest: no payload panics the decoder, and what decodes
// encodes to a payload that decodes to the same request.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range seedRequests() {
		f.Add(r.Encode(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		once := r.Encode(nil)
		r2, err := DecodeRequest(once)
		if err != nil {
			t.Fatalf("re-decoding %x: %v", once, err)
		}
		if twice := r2.Encode(nil); !bytes.Equal(once, twice) {
			t.Fatalf("round trip: %x then %x", once, twice)
		}
	})
}

func seedRequests() []Request {
	acl := task.OpenACL
	return []Request{
		{Xid: 1, Op: OpCreate, Path: "/a", Data: []byte("x"), ACL: acl, Flags: 3},
		{Xid: 2, Op: OpCreateTTL, Path: "/t", ACL: acl, Flags: 5, TTL: 1000},
		{Xid: 3, Op: OpGetData, Path: "/a", Watch: true},
		{Xid: 4, Op: OpSetData, Path: "/a", Data: []byte("y"), Version: -1},
		{Xid: 5, Op: OpMulti, Ops: []Request{{Op: OpCreate2, Path: "/m", ACL: acl}, {Op: OpCheck, Path: "/m", Version: 0}, {Op: OpDelete, Path: "/m", Version: -1}}},
		{Xid: 6, Op: OpSetWatches2, RelativeZxid: 7, DataWatches: []string{"/a"}, ExistWatches: []string{"/b"}, PersistentRecursive: []string{"/"}},
		{Xid: 7, Op: OpAuth, Scheme: "digest", Auth: []byte("u:p")},
		{Xid: 8, Op: OpSetACL, Path: "/a", ACL: acl, Version: 0},
		{Xid: 9, Op: OpMultiRead, Ops: []Request{{Op: OpGetChildren, Path: "/"}}},
		{Xid: XidPing, Op: OpPing},
		{Xid: 10, Op: OpAddWatch, Path: "/", Mode: 1},
		{Xid: 11, Op: OpCloseSession},
	}
}

// FuzzConn feeds a server one connection's bytes: after a valid handshake
// when the first byte is even, as the whole stream otherwise. Whatever
// they are, the server does not panic, and a second connection is served
// meanwhile: a bad connection costs the server that connection only.
func FuzzConn(f *testing.F) {
	var stream []byte
	for _, r := range seedRequests() {
		stream = append(stream, framed(r.Encode(nil))...)
	}
	f.Add(append([]byte{0}, stream...))
	f.Add([]byte{0, 0x7f, 0xff, 0xff, 0xff})               // a huge frame
	f.Add([]byte{0, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 14})  // a multi cut short
	f.Add([]byte{0, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0x3, 0}) // an unknown op
	f.Add(append([]byte{1}, "ruok"...))
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0})
	f.Add(append([]byte{1}, framed((&ConnectRequest{SessionID: 5, Passwd: []byte{1}}).Encode(nil))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		zk := fakezk.New(fakezk.Config{})
		defer zk.Close()
		s := New(zk, Config{MaxFrame: 1 << 16, HandshakeTimeout: time.Second})
		defer s.Close()
		in := data[1:]
		if data[0]%2 == 0 {
			in = append(framed((&ConnectRequest{TimeOut: 1000, Passwd: make([]byte, 16)}).Encode(nil)), in...)
		}
		bad, srvSide := net.Pipe()
		s.serveConn(srvSide)
		go io.Copy(io.Discard, bad)
		bad.SetWriteDeadline(time.Now().Add(time.Second)) // a bound: the server may stop reading
		bad.Write(in)

		good, srvSide2 := net.Pipe()
		s.serveConn(srvSide2)
		good.SetDeadline(time.Now().Add(5 * time.Second))
		good.Write(framed((&ConnectRequest{TimeOut: 1000, Passwd: make([]byte, 16)}).Encode(nil)))
		if _, err := ReadFrame(good, 1<<16, nil); err != nil {
			t.Fatalf("second connection's handshake: %v", err)
		}
		good.Write(framed((&Request{Xid: 1, Op: OpExists, Path: "/"}).Encode(nil)))
		b, err := ReadFrame(good, 1<<16, nil)
		if err != nil {
			t.Fatalf("second connection's request: %v", err)
		}
		if h, _, err := DecodeReplyHeader(b); err != nil || h.Xid != 1 || h.Err != 0 {
			t.Fatalf("second connection's reply: %+v %v", h, err)
		}
		bad.Close()
		good.Close()
	})
}

func framed(p []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...)
}

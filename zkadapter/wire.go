package zkadapter

import (
	"encoding/binary"
	"errors"
	"reflect"
	"unsafe"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// go-zookeeper v1.0.4 has only blocking calls, sends every create as
// opCreate (whose reply has no Stat) and every create of a multi too. The
// Conn therefore puts its requests on go-zookeeper's queue itself, with
// the opcodes ZooKeeper has for them (create2, createContainer, createTTL,
// getChildren2, multi with typed ops), through go-zookeeper's own request
// path: (*zk.Conn).queueRequest gives the request its xid, queues it for
// the send loop and returns the channel its outcome arrives on; the
// receive loop decodes the reply (by reflection, or a Decode method) and
// calls recvFunc with it, in the order replies arrive, on the receive
// goroutine, before the channel; connection loss, a failed connect and
// Close reach only the channel. addWatcher registers a watch with
// go-zookeeper so that it re-sends it after a reconnect (SetWatches).
//
// Both methods are unexported and reached with go:linkname; go.mod pins
// v1.0.4, whose signatures these declarations mirror: recvFunc is a
// func(*request, *responseHeader, error) (two pointers and an error, the
// same layout as below), the channel's element is response{zxid int64;
// err error} (zkResponse has the same layout), and watchType is an int.

//go:linkname zkQueueRequest github.com/go-zookeeper/zk.(*Conn).queueRequest
func zkQueueRequest(c *zk.Conn, opcode int32, req any, res any, recvFunc func(unsafe.Pointer, unsafe.Pointer, error)) <-chan zkResponse

//go:linkname zkEncodePacket github.com/go-zookeeper/zk.encodePacket
func zkEncodePacket(buf []byte, st any) (int, error)

//go:linkname zkFlushUnsent github.com/go-zookeeper/zk.(*Conn).flushUnsentRequests
func zkFlushUnsent(c *zk.Conn, err error)

// zkResponse mirrors go-zookeeper's response.
type zkResponse struct {
	zxid int64
	err  error
}

// zkResponseHeader mirrors go-zookeeper's responseHeader (Xid int32, Zxid
// int64, Err ErrCode (an int32)), which recvFunc's second argument points
// to.
type zkResponseHeader struct {
	xid  int32
	zxid int64
	err  int32
}

// ZooKeeper opcodes (ZooDefs.OpCode) the Conn sends itself.
const (
	opError           = -1
	opCreate          = 1
	opDelete          = 2
	opExists          = 3
	opGetData         = 4
	opSetData         = 5
	opSync            = 9
	opGetChildren2    = 12
	opCheck           = 13
	opMulti           = 14
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
)

type create2Request struct {
	Path  string
	Data  []byte
	Acl   []zk.ACL
	Flags int32
}

type createTTLRequest struct {
	Path  string
	Data  []byte
	Acl   []zk.ACL
	Flags int32
	TTL   int64
}

type create2Response struct {
	Path string
	Stat zk.Stat
}

// createOp returns the opcode and request body of a create.
func createOp(r *task.CreateRequest) (int32, any) {
	acl := acls(r.ACL)
	switch {
	case r.Mode == task.Container:
		return opCreateContainer, &create2Request{r.Path, r.Data, acl, int32(r.Mode)}
	case r.Mode.IsTTL():
		return opCreateTTL, &createTTLRequest{r.Path, r.Data, acl, int32(r.Mode), r.TTL.Milliseconds()}
	}
	return opCreate2, &create2Request{r.Path, r.Data, acl, int32(r.Mode)}
}

// multiRequest is a multi on the wire: each op with its header, then the
// done header.
type multiRequest struct {
	ops []multiOp
}

type multiOp struct {
	code int32
	body any
}

// Encode implements go-zookeeper's encoder interface. It checks every
// bound itself: go-zookeeper turns only slice-bounds panics into
// ErrShortBuffer.
func (m *multiRequest) Encode(buf []byte) (int, error) {
	w := wbuf{buf: buf}
	for _, op := range m.ops {
		w.header(op.code, false)
		switch b := op.body.(type) {
		case *create2Request:
			w.str(b.Path)
			w.bytes(b.Data)
			w.acls(b.Acl)
			w.i32(b.Flags)
		case *createTTLRequest:
			w.str(b.Path)
			w.bytes(b.Data)
			w.acls(b.Acl)
			w.i32(b.Flags)
			w.i64(b.TTL)
		case *zk.DeleteRequest:
			w.str(b.Path)
			w.i32(b.Version)
		case *zk.SetDataRequest:
			w.str(b.Path)
			w.bytes(b.Data)
			w.i32(b.Version)
		case *zk.CheckVersionRequest:
			w.str(b.Path)
			w.i32(b.Version)
		}
	}
	w.header(-1, true)
	if w.short {
		return 0, zk.ErrShortBuffer
	}
	return w.n, nil
}

// wbuf writes jute encodings into buf, remembering overflow.
type wbuf struct {
	buf   []byte
	n     int
	short bool
}

func (w *wbuf) room(k int) bool {
	if w.short || len(w.buf)-w.n < k {
		w.short = true
		return false
	}
	return true
}

func (w *wbuf) i32(v int32) {
	if w.room(4) {
		binary.BigEndian.PutUint32(w.buf[w.n:], uint32(v))
		w.n += 4
	}
}

func (w *wbuf) i64(v int64) {
	if w.room(8) {
		binary.BigEndian.PutUint64(w.buf[w.n:], uint64(v))
		w.n += 8
	}
}

func (w *wbuf) bool(v bool) {
	if w.room(1) {
		w.buf[w.n] = 0
		if v {
			w.buf[w.n] = 1
		}
		w.n++
	}
}

func (w *wbuf) str(s string) {
	w.i32(int32(len(s)))
	if w.room(len(s)) {
		w.n += copy(w.buf[w.n:], s)
	}
}

// bytes writes b; nil is written as -1, as go-zookeeper does.
func (w *wbuf) bytes(b []byte) {
	if b == nil {
		w.i32(-1)
		return
	}
	w.i32(int32(len(b)))
	if w.room(len(b)) {
		w.n += copy(w.buf[w.n:], b)
	}
}

func (w *wbuf) acls(a []zk.ACL) {
	w.i32(int32(len(a)))
	for _, x := range a {
		w.i32(x.Perms)
		w.str(x.Scheme)
		w.str(x.ID)
	}
}

func (w *wbuf) header(typ int32, done bool) {
	w.i32(typ)
	w.bool(done)
	w.i32(-1)
}

// multiResponse is a multi's reply: one result per op.
type multiResponse struct {
	results []task.MultiResult
	codes   []int32 // the error code of each op (0 for success)
}

var errShortMulti = errors.New("zkadapter: truncated multi response")

// Decode implements go-zookeeper's decoder interface.
func (m *multiResponse) Decode(buf []byte) (int, error) {
	n := 0
	need := func(k int) bool { return len(buf)-n >= k }
	str := func() (string, bool) {
		if !need(4) {
			return "", false
		}
		l := int(int32(binary.BigEndian.Uint32(buf[n:])))
		n += 4
		if l < 0 {
			return "", true
		}
		if !need(l) {
			return "", false
		}
		s := string(buf[n : n+l])
		n += l
		return s, true
	}
	for {
		if !need(9) {
			return n, errShortMulti
		}
		typ := int32(binary.BigEndian.Uint32(buf[n:]))
		done := buf[n+4] != 0
		n += 9
		if done {
			return n, nil
		}
		var res task.MultiResult
		var code int32
		switch typ {
		case opError:
			if !need(4) {
				return n, errShortMulti
			}
			code = int32(binary.BigEndian.Uint32(buf[n:]))
			n += 4
		case opCreate:
			p, ok := str()
			if !ok {
				return n, errShortMulti
			}
			res.Path = p
		case opCreate2, opCreateContainer, opCreateTTL:
			p, ok := str()
			if !ok || !need(statSize) {
				return n, errShortMulti
			}
			res.Path = p
			res.Stat = decodeStat(buf[n:])
			n += statSize
		case opSetData:
			if !need(statSize) {
				return n, errShortMulti
			}
			res.Stat = decodeStat(buf[n:])
			n += statSize
		case opDelete, opCheck:
		default:
			return n, errShortMulti
		}
		m.results = append(m.results, res)
		m.codes = append(m.codes, code)
	}
}

// statSize is a Stat on the wire: 6 int64 and 5 int32.
const statSize = 6*8 + 5*4

func decodeStat(b []byte) task.Stat {
	u64 := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[i:])) }
	u32 := func(i int) int32 { return int32(binary.BigEndian.Uint32(b[i:])) }
	return task.Stat{
		Czxid: u64(0), Mzxid: u64(8), Ctime: u64(16), Mtime: u64(24),
		Version: u32(32), Cversion: u32(36), Aversion: u32(40),
		EphemeralOwner: u64(44), DataLength: u32(52), NumChildren: u32(56),
		Pzxid: u64(60),
	}
}

// multiOps returns r's ops in wire form.
func multiOps(r *task.MultiRequest) *multiRequest {
	req := &multiRequest{ops: make([]multiOp, len(r.Ops))}
	for i, op := range r.Ops {
		switch o := op.(type) {
		case *task.CreateRequest:
			req.ops[i].code, req.ops[i].body = createOp(o)
		case *task.DeleteRequest:
			req.ops[i] = multiOp{opDelete, &zk.DeleteRequest{Path: o.Path, Version: o.Version}}
		case *task.SetDataRequest:
			req.ops[i] = multiOp{opSetData, &zk.SetDataRequest{Path: o.Path, Data: o.Data, Version: o.Version}}
		case *task.CheckRequest:
			req.ops[i] = multiOp{opCheck, &zk.CheckVersionRequest{Path: o.Path, Version: o.Version}}
		}
	}
	return req
}

// response returns the multi's outcome: per-op results, and when it
// failed, Err is the failing op's error, the ops before it are RolledBack
// and the ops after it have ErrRuntimeInconsistency, as the server reports
// them.
func (m *multiResponse) response() task.Response {
	failed := false
	for _, c := range m.codes {
		if c != 0 {
			failed = true
			break
		}
	}
	resp := task.Response{Results: m.results}
	for i, c := range m.codes {
		switch {
		case c != 0:
			resp.Results[i].Err = task.Code(c)
			if resp.Err == nil && c != int32(task.CodeRuntimeInconsistency) {
				resp.Err = task.Code(c)
			}
		case failed:
			resp.Results[i].RolledBack = true
		}
	}
	if failed && resp.Err == nil {
		resp.Err = task.ErrRuntimeInconsistency
	}
	return resp
}

// The Conn reads two unexported fields of go-zookeeper v1.0.4, located by
// reflection (so a moved field is found, and a missing or retyped one is
// caught by verifyLinkedZK's layout check rather than misread):
// zk.Conn.sendChan, the send queue (chan *request), whose length Do reads
// to know that a send cannot block; and request.pkt, the request body
// (interface{}), through which recvReply finds its call.

// sendChanField is zk.Conn's sendChan.
func sendChanField() (reflect.StructField, bool) {
	return reflect.TypeFor[zk.Conn]().FieldByName("sendChan")
}

// requestPktField is go-zookeeper's request.pkt.
func requestPktField() (reflect.StructField, bool) {
	sc, ok := sendChanField()
	if !ok || sc.Type.Kind() != reflect.Chan || sc.Type.Elem().Kind() != reflect.Pointer || sc.Type.Elem().Elem().Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	return sc.Type.Elem().Elem().FieldByName("pkt")
}

// checkLayout reports whether the two fields are where and what the Conn
// takes them to be.
func checkLayout() error {
	sc, ok := sendChanField()
	if !ok || sc.Type.Kind() != reflect.Chan || sc.Type.Elem().Kind() != reflect.Pointer {
		return errors.New("zk.Conn has no sendChan of pointers")
	}
	pkt, ok := requestPktField()
	if !ok || pkt.Type.Kind() != reflect.Interface || pkt.Type.NumMethod() != 0 {
		return errors.New("go-zookeeper's request has no pkt interface{}")
	}
	return nil
}

// requestPktOffset is pkt's offset in a request (0 if the layout check
// fails: New refuses to make a Conn then).
func requestPktOffset() uintptr {
	if checkLayout() != nil {
		return 0
	}
	f, _ := requestPktField()
	return f.Offset
}

// zkSendQueue returns zc's send queue as a channel whose length may be
// read (its elements are go-zookeeper's *request; the Conn never sends or
// receives on it).
func zkSendQueue(zc *zk.Conn) chan unsafe.Pointer {
	f, _ := sendChanField()
	return *(*chan unsafe.Pointer)(unsafe.Add(unsafe.Pointer(zc), f.Offset))
}

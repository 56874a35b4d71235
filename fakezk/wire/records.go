package wire

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Op is a request's type on the wire (ZooDefs.OpCode).
type Op int32

// The opcodes a 3.8 server serves to clients, and the notification and
// error types that appear in headers.
const (
	OpNotification     Op = 0
	OpCreate           Op = 1
	OpDelete           Op = 2
	OpExists           Op = 3
	OpGetData          Op = 4
	OpSetData          Op = 5
	OpGetACL           Op = 6
	OpSetACL           Op = 7
	OpGetChildren      Op = 8
	OpSync             Op = 9
	OpPing             Op = 11
	OpGetChildren2     Op = 12
	OpCheck            Op = 13
	OpMulti            Op = 14
	OpCreate2          Op = 15
	OpReconfig         Op = 16
	OpCheckWatches     Op = 17
	OpRemoveWatches    Op = 18
	OpCreateContainer  Op = 19
	OpDeleteContainer  Op = 20
	OpCreateTTL        Op = 21
	OpMultiRead        Op = 22
	OpAuth             Op = 100
	OpSetWatches       Op = 101
	OpSASL             Op = 102
	OpGetEphemerals    Op = 103
	OpAllChildrenCount Op = 104
	OpSetWatches2      Op = 105
	OpAddWatch         Op = 106
	OpWhoAmI           Op = 107
	OpCloseSession     Op = -11
	OpError            Op = -1 // a failed op's type inside a multi response
)

// Special xids.
const (
	XidNotification = -1
	XidPing         = -2
)

// ConnectRequest is the first frame a client sends. HasReadOnly records
// whether the optional trailing readOnly byte was there (3.4+ clients
// send it; go-zookeeper does not); the server answers in the same shape.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32 // ms
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// DecodeConnectRequest decodes a connect frame's payload.
func DecodeConnectRequest(b []byte) (ConnectRequest, error) {
	d := dec{b: b}
	r := ConnectRequest{
		ProtocolVersion: d.int(),
		LastZxidSeen:    d.long(),
		TimeOut:         d.int(),
		SessionID:       d.long(),
		Passwd:          d.buf(),
	}
	if d.err == nil && len(d.b) > 0 {
		r.ReadOnly, r.HasReadOnly = d.bool(), true
	}
	return r, d.err
}

// Encode appends the request's payload to b.
func (r *ConnectRequest) Encode(b []byte) []byte {
	e := enc{b}
	e.int(r.ProtocolVersion)
	e.long(r.LastZxidSeen)
	e.int(r.TimeOut)
	e.long(r.SessionID)
	e.buf(r.Passwd)
	if r.HasReadOnly {
		e.bool(r.ReadOnly)
	}
	return e.b
}

// ConnectResponse is the server's first frame.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode appends the response's payload to b.
func (r *ConnectResponse) Encode(b []byte) []byte {
	e := enc{b}
	e.int(r.ProtocolVersion)
	e.int(r.TimeOut)
	e.long(r.SessionID)
	e.buf(r.Passwd)
	if r.HasReadOnly {
		e.bool(r.ReadOnly)
	}
	return e.b
}

// DecodeConnectResponse decodes a connect response's payload.
func DecodeConnectResponse(b []byte) (ConnectResponse, error) {
	d := dec{b: b}
	r := ConnectResponse{ProtocolVersion: d.int(), TimeOut: d.int(), SessionID: d.long(), Passwd: d.buf()}
	if d.err == nil && len(d.b) > 0 {
		r.ReadOnly, r.HasReadOnly = d.bool(), true
	}
	return r, d.end()
}

// ReplyHeader heads every frame the server sends after the handshake.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  int32
}

func (h ReplyHeader) encode(e *enc) {
	e.int(h.Xid)
	e.long(h.Zxid)
	e.int(h.Err)
}

// Request is one client request as the wire carries it: Op says which
// fields mean something.
type Request struct {
	Xid int32
	Op  Op

	Path    string // every op on a node; getEphemerals' prefix
	Data    []byte
	ACL     []task.ACL
	Flags   int32 // create: the mode
	TTL     int64 // createTTL: ms
	Version int32
	Watch   bool
	Mode    int32 // addWatch: mode; checkWatches, removeWatches: WatcherType

	Ops []Request // multi, multiRead

	AuthType int32 // auth: always 0
	Scheme   string
	Auth     []byte

	RelativeZxid                            int64 // setWatches, setWatches2
	DataWatches, ExistWatches, ChildWatches []string
	PersistentWatches, PersistentRecursive  []string
}

func decodeACLs(d *dec) []task.ACL {
	n := d.count(12)
	if n == 0 {
		return nil
	}
	v := make([]task.ACL, 0, n)
	for range n {
		v = append(v, task.ACL{Perms: d.int(), Scheme: d.str(), ID: d.str()})
	}
	return v
}

func encodeACLs(e *enc, acl []task.ACL) {
	e.int(int32(len(acl)))
	for _, a := range acl {
		e.int(a.Perms)
		e.str(a.Scheme)
		e.str(a.ID)
	}
}

// DecodeRequest decodes a request frame's payload (header and body). It
// reads what the op's record holds and, as the server does, ignores bytes
// after it. An op it does not know decodes with its header only: the
// server answers it Unimplemented.
func DecodeRequest(b []byte) (Request, error) {
	d := dec{b: b}
	r := Request{Xid: d.int(), Op: Op(d.int())}
	if d.err != nil {
		return r, d.err
	}
	r.decodeBody(&d, 0)
	return r, d.err
}

// maxMultiDepth: a multi's ops are not multis; the decoder refuses a
// nested one instead of recursing.
const maxMultiDepth = 1

func (r *Request) decodeBody(d *dec, depth int) {
	switch r.Op {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL:
		r.Path, r.Data, r.ACL, r.Flags = d.str(), d.buf(), decodeACLs(d), d.int()
		if r.Op == OpCreateTTL {
			r.TTL = d.long()
		}
	case OpDelete, OpCheck:
		r.Path, r.Version = d.str(), d.int()
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		r.Path, r.Watch = d.str(), d.bool()
	case OpSetData:
		r.Path, r.Data, r.Version = d.str(), d.buf(), d.int()
	case OpGetACL, OpSync, OpAllChildrenCount, OpGetEphemerals:
		r.Path = d.str()
	case OpSetACL:
		r.Path, r.ACL, r.Version = d.str(), decodeACLs(d), d.int()
	case OpCheckWatches, OpRemoveWatches, OpAddWatch:
		r.Path, r.Mode = d.str(), d.int()
	case OpAuth:
		r.AuthType, r.Scheme, r.Auth = d.int(), d.str(), d.buf()
	case OpSetWatches, OpSetWatches2:
		r.RelativeZxid = d.long()
		r.DataWatches, r.ExistWatches, r.ChildWatches = d.strs(), d.strs(), d.strs()
		if r.Op == OpSetWatches2 {
			r.PersistentWatches, r.PersistentRecursive = d.strs(), d.strs()
		}
	case OpMulti, OpMultiRead:
		if depth >= maxMultiDepth {
			d.fail("nested multi")
			return
		}
		for d.err == nil {
			typ, done, _ := Op(d.int()), d.bool(), d.int()
			if done || d.err != nil {
				return
			}
			op := Request{Op: typ}
			switch typ {
			case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck, OpGetChildren, OpGetData:
				op.decodeBody(d, depth+1)
			default:
				// MultiOperationRecord.deserialize: "Invalid type of op".
				d.fail(fmt.Sprintf("op %d in a multi", typ))
				return
			}
			r.Ops = append(r.Ops, op)
		}
	}
}

// Encode appends the request's payload (header and body) to b: what a
// client sends.
func (r *Request) Encode(b []byte) []byte {
	e := enc{b}
	e.int(r.Xid)
	e.int(int32(r.Op))
	r.encodeBody(&e)
	return e.b
}

func (r *Request) encodeBody(e *enc) {
	switch r.Op {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL:
		e.str(r.Path)
		e.buf(r.Data)
		encodeACLs(e, r.ACL)
		e.int(r.Flags)
		if r.Op == OpCreateTTL {
			e.long(r.TTL)
		}
	case OpDelete, OpCheck:
		e.str(r.Path)
		e.int(r.Version)
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		e.str(r.Path)
		e.bool(r.Watch)
	case OpSetData:
		e.str(r.Path)
		e.buf(r.Data)
		e.int(r.Version)
	case OpGetACL, OpSync, OpAllChildrenCount, OpGetEphemerals:
		e.str(r.Path)
	case OpSetACL:
		e.str(r.Path)
		encodeACLs(e, r.ACL)
		e.int(r.Version)
	case OpCheckWatches, OpRemoveWatches, OpAddWatch:
		e.str(r.Path)
		e.int(r.Mode)
	case OpAuth:
		e.int(r.AuthType)
		e.str(r.Scheme)
		e.buf(r.Auth)
	case OpSetWatches, OpSetWatches2:
		e.long(r.RelativeZxid)
		e.strs(r.DataWatches)
		e.strs(r.ExistWatches)
		e.strs(r.ChildWatches)
		if r.Op == OpSetWatches2 {
			e.strs(r.PersistentWatches)
			e.strs(r.PersistentRecursive)
		}
	case OpMulti, OpMultiRead:
		for i := range r.Ops {
			e.int(int32(r.Ops[i].Op))
			e.bool(false)
			e.int(-1)
			r.Ops[i].encodeBody(e)
		}
		e.int(-1)
		e.bool(true)
		e.int(-1)
	}
}

func encodeStat(e *enc, s *task.Stat) {
	e.long(s.Czxid)
	e.long(s.Mzxid)
	e.long(s.Ctime)
	e.long(s.Mtime)
	e.int(s.Version)
	e.int(s.Cversion)
	e.int(s.Aversion)
	e.long(s.EphemeralOwner)
	e.int(s.DataLength)
	e.int(s.NumChildren)
	e.long(s.Pzxid)
}

// DecodeReplyHeader splits a reply frame's payload into its header and
// the record after it.
func DecodeReplyHeader(b []byte) (ReplyHeader, []byte, error) {
	d := dec{b: b}
	h := ReplyHeader{Xid: d.int(), Zxid: d.long(), Err: d.int()}
	return h, d.b, d.err
}

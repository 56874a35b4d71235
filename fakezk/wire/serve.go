package wire

import (
	"errors"
	"strings"
	"time"

	"github.com/zkflow/zkflow/task"
)

// serve answers one request. It reports false when the connection must
// close after what is queued (close session, a failed auth).
func (lk *link) serve(r *Request) bool {
	c := lk.fz.Conn()
	zk := lk.s.zk
	switch r.Op {
	case OpPing:
		lk.send(&task.SyncRequest{Path: "/"}, r, nil, XidPing)
		return true
	case OpCloseSession:
		// The session ends; the server replies (err 0, the close's zxid)
		// and then closes the connection, as FinalRequestProcessor does
		// (sendResponse, then sendCloseSession).
		c.Close()
		lk.reply(header(r.Xid, zk.Zxid(), 0))
		lk.closeAfter()
		return false
	case OpAuth:
		// Digest data that is null (length -1) fails too:
		// DigestAuthenticationProvider makes a String of it and throws,
		// which processPacket answers as a failed auth.
		if (r.Scheme == "digest" && r.Auth == nil) || c.AddAuth(r.Scheme, r.Auth) != nil {
			// processPacket: AuthFailed, then the connection closes.
			lk.reply(header(r.Xid, 0, int32(task.CodeAuthFailed)))
			lk.closeAfter()
			return false
		}
		lk.reply(header(r.Xid, 0, 0))
		return true
	case OpSetWatches, OpSetWatches2:
		// In the session's order: queued behind the replies before it.
		sl := lk.reserve()
		c.SetWatches(r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches,
			r.PersistentWatches, r.PersistentRecursive, lk.watcher())
		lk.fill(sl, header(r.Xid, zk.Zxid(), 0))
		return true
	case OpCheckWatches:
		if !knownWatcherType(r.Mode) {
			lk.reply(header(r.Xid, zk.Zxid(), int32(task.CodeMarshallingError)))
			return true
		}
		sl := lk.reserve()
		err := c.CheckWatches(r.Path, task.WatcherType(r.Mode))
		lk.fill(sl, header(r.Xid, zk.Zxid(), errCode(err)))
		return true
	case OpGetEphemerals:
		sl := lk.reserve()
		eph := c.Ephemerals(r.Path)
		lk.fill(sl, body(r.Xid, zk.Zxid(), func(e *enc) { e.strs(eph) }))
		return true
	case OpAllChildrenCount:
		sl := lk.reserve()
		n, err := c.AllChildrenNumber(r.Path)
		if err != nil {
			lk.fill(sl, header(r.Xid, zk.Zxid(), errCode(err)))
		} else {
			lk.fill(sl, body(r.Xid, zk.Zxid(), func(e *enc) { e.int(int32(n)) }))
		}
		return true
	case OpWhoAmI:
		sl := lk.reserve()
		ids := c.WhoAmI()
		lk.fill(sl, body(r.Xid, zk.Zxid(), func(e *enc) {
			e.int(int32(len(ids)))
			for _, id := range ids {
				e.str(id.Scheme)
				user := id.ID
				if id.Scheme == "digest" { // the user name (DigestAuthenticationProvider.getUserName)
					user, _, _ = strings.Cut(user, ":")
				}
				e.str(user)
			}
		}))
		return true
	case OpMultiRead:
		reads, writes := multiKinds(r)
		switch {
		case reads > 0 && writes > 0:
			// MultiOperationRecord.deserialize: "Mixing different kind of
			// ops"; FinalRequestProcessor answers MarshallingError.
			lk.reply(header(r.Xid, zk.Zxid(), int32(task.CodeMarshallingError)))
		case writes > 0:
			// "Invalid type of readOp", thrown once the (empty)
			// MultiResponse is made: MarshallingError, and that body.
			lk.reply(frame(func(b []byte) []byte {
				e := enc{b}
				ReplyHeader{r.Xid, zk.Zxid(), int32(task.CodeMarshallingError)}.encode(&e)
				e.int(-1)
				e.bool(true)
				e.int(-1)
				return e.b
			}))
		default:
			lk.multiRead(r)
		}
		return true
	case OpMulti:
		if reads, _ := multiKinds(r); reads > 0 {
			// Mixed kinds fail at MultiOperationRecord.deserialize, reads
			// alone in PrepRequestProcessor ("unknown type"): either way
			// MarshallingError, no body.
			lk.reply(header(r.Xid, zk.Zxid(), int32(task.CodeMarshallingError)))
			return true
		}
	case OpCheck:
		lk.check(r)
		return true
	case OpAddWatch:
		if r.Mode != int32(task.WatchPersistent) && r.Mode != int32(task.WatchPersistentRecursive) {
			// WatcherMode.fromZooDef throws IllegalArgumentException,
			// which FinalRequestProcessor answers MarshallingError.
			lk.reply(header(r.Xid, zk.Zxid(), int32(task.CodeMarshallingError)))
			return true
		}
	case OpRemoveWatches:
		if !knownWatcherType(r.Mode) {
			lk.reply(header(r.Xid, zk.Zxid(), int32(task.CodeMarshallingError)))
			return true
		}
	case OpReconfig:
		lk.reply(header(r.Xid, zk.Zxid(), int32(task.CodeReconfigDisabled)))
		return true
	}
	req, watch := lk.toTask(r)
	if req == nil {
		if !validUnserved(r.Op) {
			// An opcode Request.isValid refuses: UnimplementedRequestProcessor
			// answers Unimplemented with the request's zxid (none: -1),
			// then closes the connection (sendCloseSession).
			lk.reply(header(r.Xid, -1, int32(task.CodeUnimplemented)))
			lk.closeAfter()
			return false
		}
		// An op a 3.8.0 server serves and the fake does not: the
		// connection stays up.
		lk.reply(header(r.Xid, zk.Zxid(), int32(task.CodeUnimplemented)))
		return true
	}
	lk.send(req, r, watch, r.Xid)
	return true
}

// opCreateSession is the server's own createSession opcode, which
// Request.isValid accepts from a client too.
const opCreateSession Op = -10

// validUnserved reports whether op, one toTask leaves to Unimplemented,
// is one a 3.8.0 server takes from a client all the same
// (Request.isValid, or processPacket for sasl): deleteContainer, sasl and
// createSession, which the fake does not serve.
func validUnserved(op Op) bool {
	return op == OpDeleteContainer || op == OpSASL || op == opCreateSession
}

// knownWatcherType reports whether t is a watcher type (children, data,
// any) that WatcherType.fromInt converts; it throws for any other, and
// FinalRequestProcessor answers checkWatches and removeWatches
// MarshallingError.
func knownWatcherType(t int32) bool {
	return t >= int32(task.WatcherChildren) && t <= int32(task.WatcherAny)
}

// send applies req on the session and queues its reply, encoded for r.
func (lk *link) send(req task.Request, r *Request, watch func(task.Event), xid int32) {
	sl := lk.reserve()
	lk.fz.Send(req, func(resp task.Response, zxid int64) {
		lk.mu.Lock()
		lk.st.lzxid = zxid
		lk.mu.Unlock()
		if xid == XidPing {
			lk.fill(sl, header(XidPing, zxid, 0))
			return
		}
		lk.fill(sl, encodeReply(xid, zxid, r, &resp))
	}, watch)
}

// watcher returns the callback that turns the session's notifications into
// frames (xid -1, zxid -1 as 3.8's ServerCnxn.process sends them). The
// events a client makes for itself (NotWatching, WatchRemoved, session
// states) are not sent.
func (lk *link) watcher() func(task.Event) {
	return func(ev task.Event) {
		if ev.Type < task.EventNodeCreated || ev.Type > task.EventNodeChildrenChanged {
			return
		}
		lk.notify(body(XidNotification, -1, func(e *enc) {
			e.int(int32(ev.Type))
			e.int(3) // SyncConnected
			e.str(ev.Path)
		}))
	}
}

// toTask turns r into the session's request, with a watch callback if r
// sets a watch; nil for an op the server does not serve.
func (lk *link) toTask(r *Request) (task.Request, func(task.Event)) {
	var watch func(task.Event)
	if r.Watch {
		watch = lk.watcher()
	}
	switch r.Op {
	case OpGetData:
		return &task.GetDataRequest{Path: r.Path, Watch: r.Watch}, watch
	case OpExists:
		return &task.ExistsRequest{Path: r.Path, Watch: r.Watch}, watch
	case OpGetChildren, OpGetChildren2:
		return &task.GetChildrenRequest{Path: r.Path, Watch: r.Watch}, watch
	case OpAddWatch:
		return &task.AddWatchRequest{Path: r.Path, Mode: task.AddWatchMode(r.Mode)}, lk.watcher()
	case OpRemoveWatches:
		return &task.RemoveWatchesRequest{Path: r.Path, Type: task.WatcherType(r.Mode)}, nil
	case OpSync:
		return &task.SyncRequest{Path: r.Path}, nil
	case OpGetACL:
		return &task.GetACLRequest{Path: r.Path}, nil
	case OpSetACL:
		return &task.SetACLRequest{Path: r.Path, ACL: r.ACL, Version: r.Version}, nil
	case OpMulti:
		m := &task.MultiRequest{Ops: make([]task.MultiOp, 0, len(r.Ops))}
		for i := range r.Ops {
			op, _ := lk.toTask(&r.Ops[i])
			mo, ok := op.(task.MultiOp)
			if !ok {
				return nil, nil
			}
			m.Ops = append(m.Ops, mo)
		}
		return m, nil
	}
	if req := writeOp(r); req != nil {
		return req, nil
	}
	return nil, nil
}

// unknownMode is a create mode no server knows.
const unknownMode task.CreateMode = -1

// writeOp is the task request of a write op (also inside a multi), or nil.
func writeOp(r *Request) task.Request {
	switch r.Op {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL:
		cr := &task.CreateRequest{Path: r.Path, Data: r.Data, ACL: r.ACL, Mode: task.CreateMode(r.Flags)}
		switch {
		case cr.Mode.IsTTL() && r.Op == OpCreateTTL:
			cr.TTL = time.Duration(r.TTL) * time.Millisecond
		case cr.Mode.IsTTL():
			// A TTL mode outside createTTL has ttl -1: BadArguments
			// (PrepRequestProcessor.validateCreateRequest), once the
			// server has found it supports TTLs (fakezk's remoteCheck).
			cr.TTL = -time.Millisecond
		case r.Op == OpCreateTTL:
			// A createTTL whose mode is no TTL one: BadArguments
			// (EphemeralType.validateTTL, "ttl not valid for mode"),
			// nothing created. 3.8.0 lets ttl -1 through and its
			// SyncThread dies on it; the fake refuses that too. Given
			// as a mode no server knows, which the server refuses as
			// BadArguments (CreateMode.fromFlag).
			cr.Mode = unknownMode
		}
		return cr
	case OpDelete:
		return &task.DeleteRequest{Path: r.Path, Version: r.Version}
	case OpSetData:
		return &task.SetDataRequest{Path: r.Path, Data: r.Data, Version: r.Version}
	case OpCheck:
		return &task.CheckRequest{Path: r.Path, Version: r.Version}
	}
	return nil
}

// check answers a check sent alone as a 3.8.0 server does: it is applied
// as a transaction (one zxid); a failure is answered with its code, but a
// success is answered with nothing at all (FinalRequestProcessor builds a
// SetDataResponse with a null Stat, whose serialisation throws; the
// server logs "Unexpected exception. Destruction averted." and sends no
// reply).
func (lk *link) check(r *Request) {
	sl := lk.reserve()
	m := &task.MultiRequest{Ops: []task.MultiOp{&task.CheckRequest{Path: r.Path, Version: r.Version}}}
	lk.fz.Send(m, func(resp task.Response, zxid int64) {
		err := resp.Err
		if len(resp.Results) == 1 {
			err = resp.Results[0].Err
		}
		if err != nil {
			lk.fill(sl, header(r.Xid, zxid, errCode(err)))
			return
		}
		lk.fill(sl, nil)
	}, nil)
}

// multiKinds counts a multi's or multiRead's ops of each kind, as 3.8.0's
// MultiOperationRecord tells them apart: getData and getChildren are
// reads, the others (create, delete, setData, check) writes.
func multiKinds(r *Request) (reads, writes int) {
	for i := range r.Ops {
		switch r.Ops[i].Op {
		case OpGetData, OpGetChildren:
			reads++
		default:
			writes++
		}
	}
	return reads, writes
}

// multiRead answers the reads of a multiRead one by one, each with its own
// result, in one reply.
func (lk *link) multiRead(r *Request) {
	sl := lk.reserve()
	c := lk.fz.Conn()
	res := make([]task.Response, len(r.Ops))
	if len(r.Ops) == 0 {
		lk.fill(sl, encodeMultiRead(r, nil, lk.s.zk.Zxid()))
		return
	}
	left := len(r.Ops)
	for i := range r.Ops {
		var req task.Request
		switch o := &r.Ops[i]; o.Op {
		case OpGetData:
			req = &task.GetDataRequest{Path: o.Path}
		case OpGetChildren:
			req = &task.GetChildrenRequest{Path: o.Path}
		default:
			req = &task.CheckRequest{Path: o.Path} // not a read: refused below
		}
		// The session delivers in order, on one goroutine at a time.
		c.Send(req, func(resp task.Response, zxid int64) {
			if _, isRead := req.(*task.CheckRequest); isRead {
				resp = task.Response{Err: task.ErrBadArguments}
			}
			res[i] = resp
			left--
			if left == 0 {
				lk.fill(sl, encodeMultiRead(r, res, zxid))
			}
		}, nil)
	}
}

// errCode is the wire code of a session's error.
func errCode(err error) int32 {
	if err == nil {
		return 0
	}
	if c, ok := task.CodeOf(err); ok {
		return int32(c)
	}
	switch {
	case errors.Is(err, task.ErrInvalidPath), errors.Is(err, task.ErrInvalidArgument):
		return int32(task.CodeBadArguments)
	case errors.Is(err, task.ErrDataTooLarge):
		return int32(task.CodeMarshallingError)
	case errors.Is(err, task.ErrClosed):
		return int32(task.CodeSessionExpired)
	case errors.Is(err, task.ErrNotSent):
		return int32(task.CodeConnectionLoss)
	}
	return int32(task.CodeSystemError)
}

func header(xid int32, zxid int64, code int32) []byte {
	return frame(func(b []byte) []byte {
		e := enc{b}
		ReplyHeader{xid, zxid, code}.encode(&e)
		return e.b
	})
}

func body(xid int32, zxid int64, f func(e *enc)) []byte {
	return frame(func(b []byte) []byte {
		e := enc{b}
		ReplyHeader{xid, zxid, 0}.encode(&e)
		f(&e)
		return e.b
	})
}

// encodeReply encodes a reply to op: the header alone when it failed
// (a multi has per-op results instead), else the op's response record.
func encodeReply(xid int32, zxid int64, r *Request, resp *task.Response) []byte {
	op := r.Op
	if op == OpMulti && len(resp.Results) == len(r.Ops) && (resp.Err == nil || len(r.Ops) > 0) {
		return body(xid, zxid, func(e *enc) { encodeMulti(e, resp.Results, r.Ops) })
	}
	if resp.Err != nil {
		return header(xid, zxid, errCode(resp.Err))
	}
	return body(xid, zxid, func(e *enc) {
		switch op {
		case OpCreate, OpSync:
			e.str(resp.Path)
		case OpAddWatch:
			e.int(0) // an ErrorResponse(0), as FinalRequestProcessor answers addWatch
		case OpCreate2, OpCreateContainer, OpCreateTTL:
			e.str(resp.Path)
			encodeStat(e, &resp.Stat)
		case OpExists, OpSetData, OpSetACL:
			encodeStat(e, &resp.Stat)
		case OpGetData:
			e.buf(resp.Data)
			encodeStat(e, &resp.Stat)
		case OpGetACL:
			encodeACLs(e, resp.ACL)
			encodeStat(e, &resp.Stat)
		case OpGetChildren:
			e.strs(resp.Children)
		case OpGetChildren2:
			e.strs(resp.Children)
			encodeStat(e, &resp.Stat)
		}
	})
}

// encodeMulti writes MultiResponse (MultiResponse.serialize): per op a
// MultiHeader and its result; when the multi failed, an ErrorResult for
// every op: code 0 for the ops before the failure, the failing op's code,
// RuntimeInconsistency after it. Then the closing header.
func encodeMulti(e *enc, res []task.MultiResult, ops []Request) {
	failed := false
	for _, r := range res {
		if r.Err != nil {
			failed = true
		}
	}
	for i := range res {
		r := &res[i]
		if failed {
			code := errCode(r.Err)
			e.int(int32(OpError))
			e.bool(false)
			e.int(code)
			e.int(code)
			continue
		}
		op := ops[i].Op
		if op == OpCreate || op == OpCreate2 || op == OpCreateContainer || op == OpCreateTTL {
			// A 3.8.0 server answers a multi's create by its mode, not
			// its opcode: a container or TTL one as create2 (the name
			// and the Stat), any other as create (the name alone).
			op = OpCreate
			if m := task.CreateMode(ops[i].Flags); m == task.Container || m.IsTTL() {
				op = OpCreate2
			}
		}
		e.int(int32(op))
		e.bool(false)
		e.int(0)
		switch op {
		case OpCreate:
			e.str(r.Path)
		case OpCreate2:
			e.str(r.Path)
			encodeStat(e, &r.Stat)
		case OpSetData:
			encodeStat(e, &r.Stat)
		}
	}
	e.int(-1)
	e.bool(true)
	e.int(-1)
}

func encodeMultiRead(r *Request, res []task.Response, zxid int64) []byte {
	return body(r.Xid, zxid, func(e *enc) {
		for i := range res {
			rs := &res[i]
			if rs.Err != nil {
				code := errCode(rs.Err)
				e.int(int32(OpError))
				e.bool(false)
				e.int(code)
				e.int(code)
				continue
			}
			e.int(int32(r.Ops[i].Op))
			e.bool(false)
			e.int(0)
			if r.Ops[i].Op == OpGetData {
				e.buf(rs.Data)
				encodeStat(e, &rs.Stat)
			} else {
				e.strs(rs.Children)
			}
		}
		e.int(-1)
		e.bool(true)
		e.int(-1)
	})
}

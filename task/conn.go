package task

import (
	"time"
)

// Conn is the contract between the runtime and a ZooKeeper client: the
// asynchronous operations of one session at a time plus one ordered stream
// of session and watch events. zkadapter implements it over
// github.com/go-zookeeper/zk; fakezk implements it in memory. Conn speaks
// only this package's types.
//
// Rules every implementation keeps:
//
//   - Start is called once, before Do. After it, the Conn reports every
//     session-state change to events: StateConnected (with SessionID and
//     Timeout) when a session is usable, StateSuspended when the connection
//     drops while the session may live, StateExpired when the session is
//     gone (a following StateConnected then carries the new session's id),
//     StateClosed once after Close, and nothing after that.
//   - Do starts req and returns at once; it never blocks on the network.
//     done is called exactly once with the outcome: the Response's Err is
//     nil, a Code, ErrConnectionLoss (sent, outcome unknown), ErrNotSent
//     (certainly not applied), ErrSessionExpired or ErrClosed.
//   - watch, when req asks for a watch (ExistsRequest, GetDataRequest and
//     GetChildrenRequest with Watch set), is called at most once: exactly
//     once if the watch was set, which is when the request succeeded or, for
//     exists, failed with ErrNoNode; never otherwise. It receives the node
//     event that triggered it, or EventNotWatching (State Expired or Closed)
//     when the session ends first, or EventWatchRemoved when a
//     RemoveWatchesRequest took it away first. For an AddWatchRequest,
//     watch is called many times: see AddWatchRequest (persistent.go). A
//     change the server does not tell the session of (it may not READ the
//     node) leaves the watch waiting for the next notification on its path
//     that reaches the session.
//   - events, done and watch may be called from any goroutine but never
//     concurrently with each other, and in the order the session observed
//     them (for a server: zxid order; ZooKeeper sends a session the
//     notifications its own write triggered before that write's
//     response). They may run before Do returns. They must not block and
//     must not call back into the Conn. An implementation that cannot keep the order of some pair says
//     so in its documentation.
//   - Close ends the session (its ephemerals go), completes every pending
//     request with ErrClosed and every watch with EventNotWatching, then
//     reports StateClosed; when it returns, every callback has been made.
//     It is safe to call more than once.
type Conn interface {
	Start(events func(Event)) error
	Do(req Request, done func(Response), watch func(Event))
	Close() error
}

// Receiver takes the outcome of one request (Runtime.Send): a value, so
// that the operation tasks hand the runtime the wait they park on rather
// than a function made for the purpose.
type Receiver interface {
	Receive(Response)
}

// Watcher takes the notifications of the watch a request sets
// (Runtime.Send): once for a one-time watch, once per event for a
// persistent one. A value, as Receiver is: a watched request's wait is
// also its Watcher, so that setting a watch makes no function.
type Watcher interface {
	Notify(Event)
}

// watcherFunc is a function as a Watcher.
type watcherFunc func(Event)

func (f watcherFunc) Notify(ev Event) { f(ev) }

// SessionFollower is an optional method of a Conn. The executor calls
// Follow with the id of each session it takes as current, when it applies
// the StateConnected event. From then on, a Conn that implements it fails
// a request with ErrSessionExpired, without sending it, while its own
// session is another one: the connection has moved to a new session the
// executor has not heard of yet, so the request was made by a flow of the
// session that ended, and sent on the new one it would act for a flow that
// no longer exists (an ephemeral node nobody owns, say).
type SessionFollower interface {
	Follow(session int64)
}

// Request is one ZooKeeper operation: *CreateRequest, *DeleteRequest,
// *ExistsRequest, *GetDataRequest, *SetDataRequest, *GetChildrenRequest,
// *GetACLRequest, *SetACLRequest, *SyncRequest, *MultiRequest,
// *AddWatchRequest or *RemoveWatchesRequest. The set is closed.
type Request interface {
	// OpName is the operation's name as errors report it.
	OpName() string
	// NodePath is the path the operation is about ("" for multi, and for
	// a nil request).
	NodePath() string
	isRequest()
}

// MultiOp is one operation of a multi: *CreateRequest, *DeleteRequest,
// *SetDataRequest or *CheckRequest. The set is closed.
type MultiOp interface {
	Request
	isMultiOp()
}

// MaxTTL is the longest time to live ZooKeeper accepts: 2^40-1 ms, about
// 34.8 years (EphemeralType.TTL.maxValue; the TTL is stored in a node's
// ephemeralOwner below a type marker in the high byte).
const MaxTTL = (1<<40 - 1) * time.Millisecond

// CreateRequest creates a node. For TTL modes, TTL is the time to live:
// it goes on the wire in whole milliseconds (truncated), which must come
// to between 1 and MaxTTL; both Conn implementations refuse any other TTL with
// ErrInvalidArgument before sending, as ZooKeeper's Java client does (a
// server with TTL nodes enabled would answer BadArguments, one without
// them Unimplemented). Other modes ignore TTL.
type CreateRequest struct {
	Path string
	Data []byte
	Mode CreateMode
	ACL  []ACL
	TTL  time.Duration
}

// DeleteRequest deletes a node whose version matches (AnyVersion: any).
type DeleteRequest struct {
	Path    string
	Version int32
}

// ExistsRequest reads a node's Stat; Watch sets a data watch, also on a
// missing node (it then fires on creation).
type ExistsRequest struct {
	Path  string
	Watch bool
}

// GetDataRequest reads a node's data and Stat; Watch sets a data watch if
// the node exists.
type GetDataRequest struct {
	Path  string
	Watch bool
}

// SetDataRequest writes a node's data if its version matches.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// GetChildrenRequest lists a node's children (in no particular order) and
// returns its Stat; Watch sets a child watch if the node exists.
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// GetACLRequest reads a node's ACL and Stat. It needs READ or ADMIN on the
// node; without ADMIN the ids of digest entries come back as "user:x".
type GetACLRequest struct {
	Path string
}

// SetACLRequest replaces a node's ACL if its ACL version (Stat.Aversion)
// matches Version (AnyVersion: any). It needs ADMIN on the node and fires
// no watch.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// SyncRequest waits until the server the session talks to has caught up
// with the leader.
type SyncRequest struct {
	Path string
}

// CheckRequest, in a multi, fails the multi unless the node's version
// matches. ZooKeeper 3.8 has no standalone check: sent alone it fails with
// ErrUnimplemented.
type CheckRequest struct {
	Path    string
	Version int32
}

// MultiRequest applies Ops atomically: all or none.
type MultiRequest struct {
	Ops []MultiOp
}

// Response is the outcome of a Request. Which fields are set depends on the
// operation: Path (create: the name created, with any sequence number;
// sync: the path), Stat (create, exists, get, set, children, getACL,
// setACL), Data (get), Children (children), ACL (getACL), Results (multi:
// one per op, also when it failed).
type Response struct {
	Path     string
	Stat     Stat
	Data     []byte
	Children []string
	ACL      []ACL
	Results  []MultiResult
	Err      error
}

// MultiResult is the outcome of one operation of a multi. When the multi
// failed, the failing op has its error, the ops before it ErrOK-then-rolled
// back (reported as a nil Err with RolledBack set) and the ops after it
// ErrRuntimeInconsistency, as ZooKeeper reports them.
type MultiResult struct {
	Path       string // create: the name created
	Stat       Stat   // set: the node's Stat (a 3.8 multi create returns only the name)
	Err        error
	RolledBack bool
}

func (*CreateRequest) OpName() string      { return "create" }
func (*DeleteRequest) OpName() string      { return "delete" }
func (*ExistsRequest) OpName() string      { return "exists" }
func (*GetDataRequest) OpName() string     { return "get" }
func (*SetDataRequest) OpName() string     { return "set" }
func (*GetChildrenRequest) OpName() string { return "children" }
func (*GetACLRequest) OpName() string      { return "getACL" }
func (*SetACLRequest) OpName() string      { return "setACL" }
func (*SyncRequest) OpName() string        { return "sync" }
func (*CheckRequest) OpName() string       { return "check" }
func (*MultiRequest) OpName() string       { return "multi" }

func (r *CreateRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *DeleteRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *ExistsRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *GetDataRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *SetDataRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *GetChildrenRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *GetACLRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *SetACLRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *SyncRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *CheckRequest) NodePath() string {
	if r == nil {
		return ""
	}
	return r.Path
}

func (r *MultiRequest) NodePath() string { return "" }

func (*CreateRequest) isRequest()      {}
func (*DeleteRequest) isRequest()      {}
func (*ExistsRequest) isRequest()      {}
func (*GetDataRequest) isRequest()     {}
func (*SetDataRequest) isRequest()     {}
func (*GetChildrenRequest) isRequest() {}
func (*GetACLRequest) isRequest()      {}
func (*SetACLRequest) isRequest()      {}
func (*SyncRequest) isRequest()        {}
func (*CheckRequest) isRequest()       {}
func (*MultiRequest) isRequest()       {}

func (*CreateRequest) isMultiOp()  {}
func (*DeleteRequest) isMultiOp()  {}
func (*SetDataRequest) isMultiOp() {}
func (*CheckRequest) isMultiOp()   {}

// WatchRequested reports whether req asks for a watch.
func WatchRequested(req Request) bool {
	switch r := req.(type) {
	case *ExistsRequest:
		return r.Watch
	case *GetDataRequest:
		return r.Watch
	case *GetChildrenRequest:
		return r.Watch
	case *AddWatchRequest:
		return true
	}
	return false
}

// A PacketSizer is a Conn that can say, before sending a request, how many
// bytes it leaves under the most its server accepts (jute.maxbuffer, as
// the Conn is configured), measured as the Conn would send it: its root
// (chroot) in every path. A negative room is a request the Conn refuses
// with ErrDataTooLarge, nothing sent. zkadapter's and fakezk's Conns are
// PacketSizers; a Conn that wraps another should pass the question on.
// PacketRoom must be safe from any goroutine.
type PacketSizer interface {
	PacketRoom(req Request) int
}

// PacketRoom returns how many bytes req would leave under the packet limit
// of the connection s's flow runs on (negative: over it, refused with
// ErrDataTooLarge), and whether the runtime could say: an executor asks
// its Conn when the Conn is a PacketSizer, and measures against
// MaxPacketSize with no root when it is not. A recipe whose later
// requests carry the data of an earlier write measures them with it
// before that write (recipes/queue's Put).
func PacketRoom(s *Scope, req Request) (room int, known bool) {
	if ps, ok := s.env.rt.(PacketSizer); ok {
		return ps.PacketRoom(req), true
	}
	return 0, false
}

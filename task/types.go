package task

import (
	"fmt"
	"time"
)

// Unit is the value of a task that produces nothing but success or an error.
type Unit = struct{}

// Stat is ZooKeeper's node metadata, with every field the server keeps.
type Stat struct {
	Czxid          int64 // zxid of the change that created the node
	Mzxid          int64 // zxid of the change that last modified the data
	Ctime          int64 // creation time, milliseconds since the epoch
	Mtime          int64 // last modification time, milliseconds since the epoch
	Version        int32 // number of changes to the data
	Cversion       int32 // number of changes to the children
	Aversion       int32 // number of changes to the ACL
	EphemeralOwner int64 // session id of the owner if ephemeral, else 0
	DataLength     int32 // length of the data
	NumChildren    int32 // number of children
	Pzxid          int64 // zxid of the change that last modified the children
}

// AnyVersion matches every version in Delete, SetData and Check.
const AnyVersion int32 = -1

// CreateMode says how long a node lives and whether the server appends a
// sequence number to its name.
type CreateMode int32

// The create modes, numbered as ZooKeeper numbers them on the wire.
const (
	Persistent                  CreateMode = 0
	Ephemeral                   CreateMode = 1
	PersistentSequential        CreateMode = 2
	EphemeralSequential         CreateMode = 3
	Container                   CreateMode = 4
	PersistentWithTTL           CreateMode = 5
	PersistentSequentialWithTTL CreateMode = 6
)

// IsSequential reports whether the server appends a 10-digit sequence number.
func (m CreateMode) IsSequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialWithTTL
}

// IsEphemeral reports whether the node dies with its session.
func (m CreateMode) IsEphemeral() bool { return m == Ephemeral || m == EphemeralSequential }

// IsTTL reports whether the node carries a time to live.
func (m CreateMode) IsTTL() bool { return m == PersistentWithTTL || m == PersistentSequentialWithTTL }

func (m CreateMode) String() string {
	switch m {
	case Persistent:
		return "persistent"
	case Ephemeral:
		return "ephemeral"
	case PersistentSequential:
		return "persistent-sequential"
	case EphemeralSequential:
		return "ephemeral-sequential"
	case Container:
		return "container"
	case PersistentWithTTL:
		return "persistent-ttl"
	case PersistentSequentialWithTTL:
		return "persistent-sequential-ttl"
	}
	return fmt.Sprintf("CreateMode(%d)", int32(m))
}

// Permission bits of an ACL entry.
const (
	PermRead   int32 = 1 << 0
	PermWrite  int32 = 1 << 1
	PermCreate int32 = 1 << 2
	PermDelete int32 = 1 << 3
	PermAdmin  int32 = 1 << 4
	PermAll    int32 = 0x1f
)

// ACL is one access-control entry.
type ACL struct {
	Perms  int32
	Scheme string
	ID     string
}

// OpenACL is world:anyone with every permission, the usual choice.
var OpenACL = []ACL{{Perms: PermAll, Scheme: "world", ID: "anyone"}}

// AuthInfo is one credential a session presents to the server
// (ZooKeeper's addAuth), such as Scheme "digest" with Auth
// []byte("user:password"). A connection presents its credentials on every
// connect, before any request of its own.
type AuthInfo struct {
	Scheme string
	Auth   []byte
}

// EventType says what happened to a watched node.
type EventType int32

// Watch event types, numbered as ZooKeeper numbers them on the wire.
const (
	EventNone                EventType = -1 // a session-state change, not a node event
	EventNodeCreated         EventType = 1
	EventNodeDeleted         EventType = 2
	EventNodeDataChanged     EventType = 3
	EventNodeChildrenChanged EventType = 4
	// EventNotWatching is delivered to a watch that will never fire because its
	// session ended (expired or closed); the event's State says which.
	EventNotWatching EventType = -2
)

func (t EventType) String() string {
	switch t {
	case EventNone:
		return "None"
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventNotWatching:
		return "NotWatching"
	case EventWatchRemoved:
		return "WatchRemoved"
	}
	return fmt.Sprintf("EventType(%d)", int32(t))
}

// State is the state of a client's session as the runtime models it:
//
//	Connecting -> Connected(session) -> Suspended -> Connected(same session)
//	                                             \-> Expired -> Connected(new session)
//	any -> Closed
type State int32

// Session states.
const (
	StateConnecting State = iota // no session yet
	StateConnected               // session established and usable
	StateSuspended               // disconnected; the session may still be alive on the server
	StateExpired                 // the session is gone; its ephemerals and watches with it
	StateClosed                  // the connection was closed for good
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "Connecting"
	case StateConnected:
		return "Connected"
	case StateSuspended:
		return "Suspended"
	case StateExpired:
		return "Expired"
	case StateClosed:
		return "Closed"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Event is one item of a connection's ordered event stream: either a session
// state change (Type EventNone) or a watch notification.
type Event struct {
	Type  EventType
	State State  // session events: the new state; EventNotWatching: Expired or Closed; node events: Connected
	Path  string // for node events, the watched path
	// For StateConnected: the session's id and negotiated timeout.
	SessionID int64
	Timeout   time.Duration
}

func (e Event) String() string {
	if e.Type == EventNone {
		if e.State == StateConnected {
			return fmt.Sprintf("session %s id=%#x timeout=%s", e.State, e.SessionID, e.Timeout)
		}
		return "session " + e.State.String()
	}
	return fmt.Sprintf("%s %s", e.Type, e.Path)
}

// Session identifies one ZooKeeper session as seen by an executor. Epoch
// counts the sessions an executor has had: it changes exactly when the
// session id does, so a handle that recorded a Session can tell whether the
// session it belongs to is still the current one.
type Session struct {
	ID      int64
	Epoch   uint64
	Timeout time.Duration
}

func (s Session) String() string {
	return fmt.Sprintf("session %#x (epoch %d, timeout %s)", s.ID, s.Epoch, s.Timeout)
}

package zkadapter

import (
	"errors"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// ErrNoSession is wrapped by the error of Dial and Conn.Connect when no
// session was established before the context ended.
var ErrNoSession = errors.New("zkadapter: no session established")

// ErrNotZooKeeper is wrapped by the error of Dial and Conn.Connect when a
// server answered the connect request with something that is not a
// connect response (an HTTP reply, an SSH banner, ...), or with one no
// ZooKeeper sends (a session granted a timeout that is not positive): the
// address names another service, or a broken one.
var ErrNotZooKeeper = errors.New("not a ZooKeeper server")

// zkCodes maps go-zookeeper's error values to task's sentinels.
var zkCodes = map[error]error{
	zk.ErrNoNode:                  task.ErrNoNode,
	zk.ErrNoAuth:                  task.ErrNoAuth,
	zk.ErrBadVersion:              task.ErrBadVersion,
	zk.ErrNoChildrenForEphemerals: task.ErrNoChildrenForEphemerals,
	zk.ErrNodeExists:              task.ErrNodeExists,
	zk.ErrNotEmpty:                task.ErrNotEmpty,
	zk.ErrSessionExpired:          task.ErrSessionExpired,
	zk.ErrInvalidACL:              task.ErrInvalidACL,
	zk.ErrAuthFailed:              task.CodeAuthFailed,
	zk.ErrSessionMoved:            task.CodeSessionMoved,
	zk.ErrReconfigDisabled:        task.CodeReconfigDisabled,
	zk.ErrBadArguments:            task.ErrBadArguments,
	zk.ErrAPIError:                task.CodeAPIError,
	zk.ErrNothing:                 task.Code(-117), // ZooKeeper's "no server responses to process"
	// go-zookeeper's value for code -116 (ZCLOSING): only a reply carries
	// it to mapErr (its own flush at Close reaches no recvFunc, and Close
	// completes the Conn's requests itself with task.ErrClosed).
	zk.ErrClosing: task.Code(-116),
	// Request outcomes decided on the client.
	zk.ErrConnectionClosed:   task.ErrConnectionLoss, // in flight when the connection broke
	zk.ErrNoServer:           task.ErrNotSent,        // still queued when every server failed
	zk.ErrInvalidPath:        task.ErrInvalidPath,    // unreachable: task.Validate runs first
	zk.ErrInvalidFlags:       task.ErrInvalidArgument,
	zk.ErrShortBuffer:        task.ErrDataTooLarge, // did not fit go-zookeeper's send buffer: not sent
	zk.ErrPtrExpected:        task.ErrInvalidArgument,
	zk.ErrUnhandledFieldType: task.ErrInvalidArgument,
}

// unknownPrefix is how go-zookeeper formats a server code it has no value
// for: fmt.Errorf("unknown error: %v", code).
const unknownPrefix = "unknown error: "

// mapErr turns a go-zookeeper error into the Conn contract's error: a
// task sentinel, a task.Code (unknown codes keep their number), or
// ErrConnectionLoss for anything else, which go-zookeeper returns only for
// a request whose write or read failed on the network (raw net errors): it
// may have reached the server.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := zkCodes[err]; ok {
		return e
	}
	if s, ok := strings.CutPrefix(err.Error(), unknownPrefix); ok {
		if n, perr := strconv.ParseInt(s, 10, 32); perr == nil {
			return task.Code(n)
		}
	}
	return task.ErrConnectionLoss
}

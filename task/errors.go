package task

import (
	"context"
	"errors"
	"fmt"
)

// Code is a ZooKeeper server error code. Every code the server defines is a
// sentinel below, tested with errors.Is; a code this package does not know
// is still a Code, so it keeps its number: errors.As(err, &code) recovers it.
type Code int32

// Error implements error.
func (c Code) Error() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("zookeeper error code %d", int32(c))
}

// Server error codes, as ZooKeeper numbers them (KeeperException.Code).
const (
	CodeOK                       Code = 0
	CodeSystemError              Code = -1
	CodeRuntimeInconsistency     Code = -2
	CodeDataInconsistency        Code = -3
	CodeConnectionLoss           Code = -4
	CodeMarshallingError         Code = -5
	CodeUnimplemented            Code = -6
	CodeOperationTimeout         Code = -7
	CodeBadArguments             Code = -8
	CodeUnknownSession           Code = -12
	CodeNewConfigNoQuorum        Code = -13
	CodeReconfigInProgress       Code = -14
	CodeAPIError                 Code = -100
	CodeNoNode                   Code = -101
	CodeNoAuth                   Code = -102
	CodeBadVersion               Code = -103
	CodeNoChildrenForEphemerals  Code = -108
	CodeNodeExists               Code = -110
	CodeNotEmpty                 Code = -111
	CodeSessionExpired           Code = -112
	CodeInvalidCallback          Code = -113
	CodeInvalidACL               Code = -114
	CodeAuthFailed               Code = -115
	CodeSessionMoved             Code = -118
	CodeNotReadOnly              Code = -119
	CodeEphemeralOnLocalSession  Code = -120
	CodeNoWatcher                Code = -121
	CodeRequestTimeout           Code = -122
	CodeReconfigDisabled         Code = -123
	CodeSessionClosedRequireSASL Code = -124
	CodeQuotaExceeded            Code = -125
	CodeThrottledOp              Code = -127
)

var codeNames = map[Code]string{
	CodeOK:                       "ok",
	CodeSystemError:              "system error",
	CodeRuntimeInconsistency:     "runtime inconsistency",
	CodeDataInconsistency:        "data inconsistency",
	CodeConnectionLoss:           "connection loss: the request may or may not have been applied",
	CodeMarshallingError:         "marshalling error",
	CodeUnimplemented:            "unimplemented",
	CodeOperationTimeout:         "operation timeout",
	CodeBadArguments:             "bad arguments",
	CodeUnknownSession:           "unknown session",
	CodeNewConfigNoQuorum:        "new config has no quorum",
	CodeReconfigInProgress:       "reconfig in progress",
	CodeAPIError:                 "api error",
	CodeNoNode:                   "node does not exist",
	CodeNoAuth:                   "not authenticated",
	CodeBadVersion:               "version conflict",
	CodeNoChildrenForEphemerals:  "ephemeral nodes may not have children",
	CodeNodeExists:               "node already exists",
	CodeNotEmpty:                 "node has children",
	CodeSessionExpired:           "session expired",
	CodeInvalidCallback:          "invalid callback",
	CodeInvalidACL:               "invalid acl",
	CodeAuthFailed:               "authentication failed",
	CodeSessionMoved:             "session moved",
	CodeNotReadOnly:              "not a read-only call",
	CodeEphemeralOnLocalSession:  "ephemeral on local session",
	CodeNoWatcher:                "no watcher",
	CodeRequestTimeout:           "request timeout",
	CodeReconfigDisabled:         "reconfig disabled",
	CodeSessionClosedRequireSASL: "session closed: sasl authentication required",
	CodeQuotaExceeded:            "quota exceeded",
	CodeThrottledOp:              "operation throttled",
}

// Sentinel errors for the outcomes recipes must tell apart. Test with
// errors.Is: operations wrap them in an *OpError naming operation and path.
var (
	// ErrConnectionLoss: the connection broke while the request was in
	// flight. The request may or may not have been applied.
	ErrConnectionLoss error = CodeConnectionLoss
	// ErrSessionExpired: the session is gone, with its ephemerals and watches.
	ErrSessionExpired error = CodeSessionExpired
	// ErrNoNode: the node (or, for create, its parent) does not exist.
	ErrNoNode error = CodeNoNode
	// ErrNodeExists: create of a node that is already there.
	ErrNodeExists error = CodeNodeExists
	// ErrBadVersion: the expected version did not match.
	ErrBadVersion error = CodeBadVersion
	// ErrNotEmpty: delete of a node that has children.
	ErrNotEmpty error = CodeNotEmpty
	// ErrNoChildrenForEphemerals: create under an ephemeral node.
	ErrNoChildrenForEphemerals error = CodeNoChildrenForEphemerals
	// ErrBadArguments: the server rejected the request's arguments.
	ErrBadArguments error = CodeBadArguments
	// ErrNoAuth: the session lacks the permission the ACL demands.
	ErrNoAuth error = CodeNoAuth
	// ErrRuntimeInconsistency: reported by a multi for the operations after
	// the one that failed (they were never tried).
	ErrRuntimeInconsistency error = CodeRuntimeInconsistency
	// ErrUnimplemented: the server does not implement the operation.
	ErrUnimplemented error = CodeUnimplemented
	// ErrInvalidACL: the ACL list is empty or malformed.
	ErrInvalidACL error = CodeInvalidACL
)

// ClientError is an error decided on the client, never sent by a server.
type ClientError string

// Error implements error.
func (e ClientError) Error() string { return string(e) }

// Client-side sentinels.
var (
	// ErrNotSent: the request was never sent, so it was certainly not applied.
	ErrNotSent error = ClientError("request not sent: it was not applied")
	// ErrClosed: the connection or executor was closed.
	ErrClosed error = ClientError("closed")
	// ErrDeadlineExceeded: the chain's deadline passed. errors.Is also
	// matches context.DeadlineExceeded. A request waiting for its reply
	// when the deadline passed gets an *OpError naming it ("zk get /a:
	// deadline exceeded"); match with errors.Is, not ==.
	ErrDeadlineExceeded error = deadlineError{}
	// ErrCanceled: the chain was canceled by its caller. errors.Is also
	// matches context.Canceled.
	ErrCanceled error = canceledError{}
	// ErrInvalidPath: the path breaks ZooKeeper's path rules.
	ErrInvalidPath error = ClientError("invalid path")
	// ErrDataTooLarge: the data is over the connection's size limit
	// (MaxDataSize) or the request over the packet limit (MaxPacketSize);
	// the error wrapping it names the size and the limit.
	ErrDataTooLarge error = ClientError("data too large")
	// ErrInvalidArgument: an argument checked on the client is out of range
	// (a nil task, a negative size, an unknown create mode, ...).
	ErrInvalidArgument error = ClientError("invalid argument")
)

type deadlineError struct{}

func (deadlineError) Error() string        { return "deadline exceeded" }
func (deadlineError) Is(target error) bool { return target == context.DeadlineExceeded }
func (deadlineError) Timeout() bool        { return true }

type canceledError struct{}

func (canceledError) Error() string        { return "canceled" }
func (canceledError) Is(target error) bool { return target == context.Canceled }

// OpError records the operation and path of a failed ZooKeeper operation.
type OpError struct {
	Op   string // "create", "delete", "exists", "get", "set", "children", "getACL", "setACL", "multi", "sync"; "exec" for Exec given a nil request
	Path string
	Err  error // a sentinel above, a Code, or a *MultiError
}

func (e *OpError) Error() string {
	if e.Path == "" {
		return "zk " + e.Op + ": " + e.Err.Error()
	}
	return "zk " + e.Op + " " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *OpError) Unwrap() error { return e.Err }

// MultiError is the error of a multi that failed: Index is the operation that
// failed and Err its error (errors.Is(multiErr, ErrBadVersion) works).
type MultiError struct {
	Index int
	Err   error
}

func (e *MultiError) Error() string { return fmt.Sprintf("op %d: %v", e.Index, e.Err) }

// Unwrap returns the failing operation's error.
func (e *MultiError) Unwrap() error { return e.Err }

// CodeOf returns the server code of err, if err is or wraps a Code.
func CodeOf(err error) (Code, bool) {
	var c Code
	if errors.As(err, &c) {
		return c, true
	}
	return 0, false
}

// IsRetryable reports whether err leaves the operation's outcome open in a
// way a retry can settle: connection loss (maybe applied) or not sent (not
// applied). Session expiry, closing and deadlines are not retryable.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrConnectionLoss) || errors.Is(err, ErrNotSent)
}

func opErr(op, path string, err error) error {
	if err == nil || hasOpError(err) {
		return err
	}
	return &OpError{Op: op, Path: path, Err: err}
}

// hasOpError is errors.As(err, new(*OpError)) without its target, which
// escapes to the heap on every call (an operation's failure paid an
// allocation for it): the same walk of err's tree, the same As methods
// asked (those alone get a target).
func hasOpError(err error) bool {
	for err != nil {
		if _, ok := err.(*OpError); ok {
			return true
		}
		if x, ok := err.(interface{ As(any) bool }); ok {
			var oe *OpError
			if x.As(&oe) {
				return true
			}
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if hasOpError(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// Package reqcheck holds the checks both Conn implementations (fakezk and
// zkadapter) make on a request before it is sent, so that bad input gets
// the same typed error from each: Validate (paths, modes, TTLs, data
// sizes, multi contents) and PacketSize with PacketTooLarge (the request
// on the wire against jute.maxbuffer, task.MaxPacketSize).
package reqcheck

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// validCreateMode reports whether m is one of the defined create modes.
func validCreateMode(m task.CreateMode) bool {
	return m >= task.Persistent && m <= task.PersistentSequentialWithTTL
}

// Validate checks req on the client side, before it is sent: paths,
// create modes, TTLs (1 ms to task.MaxTTL, in whole milliseconds), data
// size (limit <= 0 means task.MaxDataSize) and multi contents. The error
// wraps task.ErrInvalidPath, task.ErrDataTooLarge or
// task.ErrInvalidArgument.
func Validate(req task.Request, limit int) error {
	if limit <= 0 {
		limit = task.MaxDataSize
	}
	if ok, err := validateWatchReq(req); ok {
		return err
	}
	switch r := req.(type) {
	case nil:
		return task.ErrInvalidArgument
	case *task.CreateRequest:
		if r == nil {
			return task.ErrInvalidArgument
		}
		if !validCreateMode(r.Mode) {
			return task.ErrInvalidArgument
		}
		if r.Mode.IsTTL() {
			if ms := r.TTL.Milliseconds(); ms < 1 || ms > task.MaxTTL.Milliseconds() {
				return task.ErrInvalidArgument
			}
		}
		if len(r.Data) > limit {
			return dataTooLarge(len(r.Data), limit)
		}
		return task.ValidatePath(r.Path, r.Mode.IsSequential())
	case *task.SetDataRequest:
		if r == nil {
			return task.ErrInvalidArgument
		}
		if len(r.Data) > limit {
			return dataTooLarge(len(r.Data), limit)
		}
		return task.ValidatePath(r.Path, false)
	case *task.SetACLRequest:
		// The ACL itself is the server's to judge (ErrInvalidACL), as a
		// create's is: which schemes and ids are valid depends on the
		// server's authentication providers.
		if r == nil {
			return task.ErrInvalidArgument
		}
		return task.ValidatePath(r.Path, false)
	case *task.MultiRequest:
		if r == nil {
			return task.ErrInvalidArgument
		}
		total := 0
		for _, op := range r.Ops {
			if op == nil {
				return task.ErrInvalidArgument
			}
			if err := Validate(op, limit); err != nil {
				return err
			}
			switch o := op.(type) {
			case *task.CreateRequest:
				total += len(o.Data)
			case *task.SetDataRequest:
				total += len(o.Data)
			}
		}
		if total > limit {
			return fmt.Errorf("%w: the multi's data totals %d bytes, over the limit of %d", task.ErrDataTooLarge, total, limit)
		}
		return nil
	}
	if isNilRequest(req) {
		return task.ErrInvalidArgument
	}
	return task.ValidatePath(req.NodePath(), false)
}

// validateWatchReq is Validate for the two requests.
func validateWatchReq(req task.Request) (bool, error) {
	switch r := req.(type) {
	case *task.AddWatchRequest:
		if r == nil || r.Mode != task.WatchPersistent && r.Mode != task.WatchPersistentRecursive {
			return true, task.ErrInvalidArgument
		}
		return true, task.ValidatePath(r.Path, false)
	case *task.RemoveWatchesRequest:
		if r == nil || r.Type < task.WatcherChildren || r.Type > task.WatcherAny {
			return true, task.ErrInvalidArgument
		}
		return true, task.ValidatePath(r.Path, false)
	}
	return false, nil
}

func isNilRequest(req task.Request) bool {
	switch r := req.(type) {
	case *task.DeleteRequest:
		return r == nil
	case *task.ExistsRequest:
		return r == nil
	case *task.GetDataRequest:
		return r == nil
	case *task.GetChildrenRequest:
		return r == nil
	case *task.SyncRequest:
		return r == nil
	case *task.GetACLRequest:
		return r == nil
	case *task.CheckRequest:
		return r == nil
	}
	return false
}

// dataTooLarge is task.ErrDataTooLarge for data of size bytes over limit.
func dataTooLarge(size, limit int) error {
	return fmt.Errorf("%w: %d bytes of data, over the limit of %d", task.ErrDataTooLarge, size, limit)
}

// PacketTooLarge is task.ErrDataTooLarge for a request of size bytes on the
// wire (PacketSize) over the packet limit: the error both Conn
// implementations return for a request they refuse to send.
func PacketTooLarge(size, limit int) error {
	return fmt.Errorf("%w: the request is %d bytes on the wire, over the packet limit of %d (jute.maxbuffer)", task.ErrDataTooLarge, size, limit)
}

// PacketSize is the length of req on the wire: the request header (xid,
// type) and the jute record, as ZooKeeper's protocol lays them out.
func PacketSize(req task.Request) int {
	return 8 + bodySize(req)
}

func strSize(s string) int { return 4 + len(s) }

// aclSize is a jute vector of ACL records: a count, then perms, scheme
// and id of each.
func aclSize(acl []task.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + strSize(a.Scheme) + strSize(a.ID)
	}
	return n
}

func bodySize(req task.Request) int {
	switch r := req.(type) {
	case *task.CreateRequest:
		n := strSize(r.Path) + 4 + len(r.Data) + aclSize(r.ACL) + 4 // path, data, acl, flags
		if r.Mode.IsTTL() {
			n += 8
		}
		return n
	case *task.DeleteRequest:
		return strSize(r.Path) + 4
	case *task.ExistsRequest:
		return strSize(r.Path) + 1
	case *task.GetDataRequest:
		return strSize(r.Path) + 1
	case *task.GetChildrenRequest:
		return strSize(r.Path) + 1
	case *task.SetDataRequest:
		return strSize(r.Path) + 4 + len(r.Data) + 4
	case *task.GetACLRequest:
		return strSize(r.Path)
	case *task.SetACLRequest:
		return strSize(r.Path) + aclSize(r.ACL) + 4
	case *task.SyncRequest:
		return strSize(r.Path)
	case *task.CheckRequest:
		return strSize(r.Path) + 4
	case *task.AddWatchRequest: // path, mode
		return strSize(r.Path) + 4
	case *task.RemoveWatchesRequest: // path, type
		return strSize(r.Path) + 4
	case *task.MultiRequest:
		n := 9 // the done header
		for _, op := range r.Ops {
			n += 9 + bodySize(op)
		}
		return n
	}
	return 0
}

package fakezk

import "github.com/zkflow/zkflow/task"

// DefaultMaxPacketSize is ZooKeeper's default jute.maxbuffer (0xfffff): a
// real server closes the connection of a client that sends a longer
// request, and zkadapter therefore rejects such a request with
// task.ErrDataTooLarge before sending it. fakezk does the same.
const DefaultMaxPacketSize = 0xfffff

// packetSize is the length of req on the wire as zkadapter sends it: the
// request header (xid, type) and the jute record. It is a copy of
// zkadapter's computation (fakezk must not import zkadapter); the
// differential test (internal/difftest) checks that they agree at the
// limit.
func packetSize(req task.Request) int {
	return 8 + bodySize(req)
}

func strSize(s string) int { return 4 + len(s) }

func bodySize(req task.Request) int {
	switch r := req.(type) {
	case *task.CreateRequest:
		n := strSize(r.Path) + 4 + len(r.Data) + 4 + 4 // path, data, acl count, flags
		for _, a := range r.ACL {
			n += 4 + strSize(a.Scheme) + strSize(a.ID)
		}
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
	case *task.SyncRequest:
		return strSize(r.Path)
	case *task.CheckRequest:
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

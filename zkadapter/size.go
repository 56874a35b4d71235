package zkadapter

import "github.com/zkflow/zkflow/task"

// DefaultMaxPacketSize is ZooKeeper's default jute.maxbuffer (0xfffff): a
// server closes the connection of a client that sends a longer request,
// which the client sees as connection loss, and a retry sees again.
const DefaultMaxPacketSize = 0xfffff

// packetSize is the length of req on the wire as the Conn sends it: the
// request header (xid, type) and the jute record (wire.go, ops.go).
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

package task

import "fmt"

// MaxPacketSize is ZooKeeper's default jute.maxbuffer (0xfffff): a server
// closes the connection of a client that sends a longer request, which the
// client would see as connection loss, and a retry would see again. Both
// Conn implementations refuse a request whose PacketSize is over it with
// ErrDataTooLarge before sending it. Data of MaxDataSize is always over
// it once the path, ACL and headers are counted (see MaxDataSize).
const MaxPacketSize = 0xfffff

// dataTooLarge is ErrDataTooLarge for data of size bytes over limit.
func dataTooLarge(size, limit int) error {
	return fmt.Errorf("%w: %d bytes of data, over the limit of %d", ErrDataTooLarge, size, limit)
}

// PacketTooLarge is ErrDataTooLarge for a request of size bytes on the
// wire (PacketSize) over the packet limit: the error both Conn
// implementations return for a request they refuse to send.
func PacketTooLarge(size, limit int) error {
	return fmt.Errorf("%w: the request is %d bytes on the wire, over the packet limit of %d (jute.maxbuffer)", ErrDataTooLarge, size, limit)
}

// PacketSize is the length of req on the wire: the request header (xid,
// type) and the jute record, as ZooKeeper's protocol lays them out.
func PacketSize(req Request) int {
	return 8 + bodySize(req)
}

func strSize(s string) int { return 4 + len(s) }

// aclSize is a jute vector of ACL records: a count, then perms, scheme
// and id of each.
func aclSize(acl []ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + strSize(a.Scheme) + strSize(a.ID)
	}
	return n
}

func bodySize(req Request) int {
	switch r := req.(type) {
	case *CreateRequest:
		n := strSize(r.Path) + 4 + len(r.Data) + aclSize(r.ACL) + 4 // path, data, acl, flags
		if r.Mode.IsTTL() {
			n += 8
		}
		return n
	case *DeleteRequest:
		return strSize(r.Path) + 4
	case *ExistsRequest:
		return strSize(r.Path) + 1
	case *GetDataRequest:
		return strSize(r.Path) + 1
	case *GetChildrenRequest:
		return strSize(r.Path) + 1
	case *SetDataRequest:
		return strSize(r.Path) + 4 + len(r.Data) + 4
	case *GetACLRequest:
		return strSize(r.Path)
	case *SetACLRequest:
		return strSize(r.Path) + aclSize(r.ACL) + 4
	case *SyncRequest:
		return strSize(r.Path)
	case *CheckRequest:
		return strSize(r.Path) + 4
	case *MultiRequest:
		n := 9 // the done header
		for _, op := range r.Ops {
			n += 9 + bodySize(op)
		}
		return n
	}
	return 0
}

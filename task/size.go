package task

// MaxPacketSize is ZooKeeper's default jute.maxbuffer (0xfffff): a server
// closes the connection of a client that sends a longer request, which the
// client would see as connection loss, and a retry would see again. Both
// Conn implementations refuse such a request with ErrDataTooLarge before
// sending it. Note that data of MaxDataSize is over it once the path, ACL
// and headers are counted.
const MaxPacketSize = 0xfffff

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

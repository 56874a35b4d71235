package zkadapter

import (
	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// ZooKeeper's opcodes for reading and replacing a node's ACL.
const (
	opGetACL = 6
	opSetACL = 7
)

// The jute records of getACL and setACL (GetACLRequest is a pathRequest;
// SetACLResponse a statResponse).
type (
	getACLResponse struct {
		Acl  []zk.ACL
		Stat zk.Stat
	}
	setACLRequest struct {
		Path    string
		Acl     []zk.ACL
		Version int32
	}
)

func getACLOp(r *task.GetACLRequest) wireOp {
	return wireOp{code: opGetACL, req: &pathRequest{r.Path}, res: &getACLResponse{}, reply: getACLReply}
}

func setACLOp(r *task.SetACLRequest) wireOp {
	return wireOp{code: opSetACL, req: &setACLRequest{Path: r.Path, Acl: acls(r.ACL), Version: r.Version}, res: &statResponse{},
		reply: statReply}
}

func getACLReply(res any, err error) task.Response {
	if err != nil {
		return task.Response{Err: mapErr(err)}
	}
	r := res.(*getACLResponse)
	return task.Response{ACL: fromACLs(r.Acl), Stat: stat(&r.Stat)}
}

// fromACLs converts a reply's ACL list; an empty one is an empty slice.
func fromACLs(in []zk.ACL) []task.ACL {
	out := make([]task.ACL, len(in))
	for i, a := range in {
		out[i] = task.ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

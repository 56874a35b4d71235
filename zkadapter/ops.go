package zkadapter

import (
	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// Request and reply bodies, laid out as ZooKeeper's jute records so that
// go-zookeeper's reflection codec writes and reads them.
type (
	pathRequest      struct{ Path string }
	pathWatchRequest struct {
		Path  string
		Watch bool
	}
	statResponse    struct{ Stat zk.Stat }
	getDataResponse struct {
		Data []byte
		Stat zk.Stat
	}
	childrenResponse struct {
		Children []string
		Stat     zk.Stat
	}
	pathResponse  struct{ Path string }
	emptyResponse struct{}
)

// wireOp is one request ready for go-zookeeper's queue: its opcode and
// bodies, how to read its reply into a task.Response (a function of the
// reply body, the same for every request of a kind: no function value per
// request), and the watch it sets when it succeeds (watchNone if none).
type wireOp struct {
	code  int32
	req   any
	res   any
	reply func(res any, err error) task.Response
	watch watchKind // set on success
	// watchOnNoNode: exists with a watch also sets one (an exist watch)
	// when it fails with NoNode.
	watchOnNoNode bool
}

// prepare turns a validated request into its wire form.
func prepare(req task.Request) wireOp {
	switch r := req.(type) {
	case *task.CreateRequest:
		code, body := createOp(r)
		return wireOp{code: code, req: body, res: &create2Response{}, reply: createReply}
	case *task.DeleteRequest:
		return wireOp{code: opDelete, req: &zk.DeleteRequest{Path: r.Path, Version: r.Version}, res: &emptyResponse{}, reply: errReply}
	case *task.ExistsRequest:
		op := wireOp{code: opExists, req: &pathWatchRequest{r.Path, r.Watch}, res: &statResponse{}, reply: statReply}
		if r.Watch {
			op.watch, op.watchOnNoNode = watchData, true
		}
		return op
	case *task.GetDataRequest:
		op := wireOp{code: opGetData, req: &pathWatchRequest{r.Path, r.Watch}, res: &getDataResponse{}, reply: getDataReply}
		if r.Watch {
			op.watch = watchData
		}
		return op
	case *task.SetDataRequest:
		return wireOp{code: opSetData, req: &zk.SetDataRequest{Path: r.Path, Data: r.Data, Version: r.Version}, res: &statResponse{}, reply: statReply}
	case *task.GetChildrenRequest:
		op := wireOp{code: opGetChildren2, req: &pathWatchRequest{r.Path, r.Watch}, res: &childrenResponse{}, reply: childrenReply}
		if r.Watch {
			op.watch = watchChild
		}
		return op
	case *task.GetACLRequest:
		return getACLOp(r)
	case *task.SetACLRequest:
		return setACLOp(r)
	case *task.SyncRequest:
		return wireOp{code: opSync, req: &pathRequest{r.Path}, res: &pathResponse{}, reply: pathReply}
	case *task.MultiRequest:
		return wireOp{code: opMulti, req: multiOps(r), res: &multiResponse{}, reply: multiReply}
	case *task.AddWatchRequest:
		return addWatchOp(r)
	case *task.RemoveWatchesRequest:
		return removeWatchesOp(r)
	}
	panic("zkadapter: unreachable: task.Validate accepted an unknown request")
}

// The replies' readers.

func errReply(_ any, err error) task.Response { return task.Response{Err: mapErr(err)} }

func createReply(res any, err error) task.Response {
	if err != nil {
		return task.Response{Err: mapErr(err)}
	}
	r := res.(*create2Response)
	return task.Response{Path: r.Path, Stat: stat(&r.Stat)}
}

func statReply(res any, err error) task.Response {
	if err != nil {
		return task.Response{Err: mapErr(err)}
	}
	return task.Response{Stat: stat(&res.(*statResponse).Stat)}
}

func getDataReply(res any, err error) task.Response {
	if err != nil {
		return task.Response{Err: mapErr(err)}
	}
	r := res.(*getDataResponse)
	return task.Response{Data: r.Data, Stat: stat(&r.Stat)}
}

func childrenReply(res any, err error) task.Response {
	if err != nil {
		return task.Response{Err: mapErr(err)}
	}
	r := res.(*childrenResponse)
	names := r.Children
	if names == nil {
		names = []string{}
	}
	return task.Response{Children: names, Stat: stat(&r.Stat)}
}

func pathReply(res any, err error) task.Response {
	if err != nil {
		return task.Response{Err: mapErr(err)}
	}
	return task.Response{Path: res.(*pathResponse).Path}
}

func multiReply(res any, err error) task.Response {
	if err != nil {
		return task.Response{Err: mapErr(err)}
	}
	return res.(*multiResponse).response()
}

func stat(s *zk.Stat) task.Stat {
	if s == nil {
		return task.Stat{}
	}
	return task.Stat{
		Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime,
		Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
		EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength,
		NumChildren: s.NumChildren, Pzxid: s.Pzxid,
	}
}

func acls(in []task.ACL) []zk.ACL {
	out := make([]zk.ACL, len(in))
	for i, a := range in {
		out[i] = zk.ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

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
// bodies, how to read its reply into a task.Response, and the watch it
// sets when it succeeds (watchNone if none).
type wireOp struct {
	code  int32
	req   any
	res   any
	reply func(err error) task.Response
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
		res := &create2Response{}
		return wireOp{code: code, req: body, res: res, reply: func(err error) task.Response {
			if err != nil {
				return task.Response{Err: mapErr(err)}
			}
			return task.Response{Path: res.Path, Stat: stat(&res.Stat)}
		}}
	case *task.DeleteRequest:
		return wireOp{code: opDelete, req: &zk.DeleteRequest{Path: r.Path, Version: r.Version}, res: &emptyResponse{},
			reply: func(err error) task.Response { return task.Response{Err: mapErr(err)} }}
	case *task.ExistsRequest:
		res := &statResponse{}
		op := wireOp{code: opExists, req: &pathWatchRequest{r.Path, r.Watch}, res: res, reply: func(err error) task.Response {
			if err != nil {
				return task.Response{Err: mapErr(err)}
			}
			return task.Response{Stat: stat(&res.Stat)}
		}}
		if r.Watch {
			op.watch, op.watchOnNoNode = watchData, true
		}
		return op
	case *task.GetDataRequest:
		res := &getDataResponse{}
		op := wireOp{code: opGetData, req: &pathWatchRequest{r.Path, r.Watch}, res: res, reply: func(err error) task.Response {
			if err != nil {
				return task.Response{Err: mapErr(err)}
			}
			return task.Response{Data: res.Data, Stat: stat(&res.Stat)}
		}}
		if r.Watch {
			op.watch = watchData
		}
		return op
	case *task.SetDataRequest:
		res := &statResponse{}
		return wireOp{code: opSetData, req: &zk.SetDataRequest{Path: r.Path, Data: r.Data, Version: r.Version}, res: res,
			reply: func(err error) task.Response {
				if err != nil {
					return task.Response{Err: mapErr(err)}
				}
				return task.Response{Stat: stat(&res.Stat)}
			}}
	case *task.GetChildrenRequest:
		res := &childrenResponse{}
		op := wireOp{code: opGetChildren2, req: &pathWatchRequest{r.Path, r.Watch}, res: res, reply: func(err error) task.Response {
			if err != nil {
				return task.Response{Err: mapErr(err)}
			}
			names := res.Children
			if names == nil {
				names = []string{}
			}
			return task.Response{Children: names, Stat: stat(&res.Stat)}
		}}
		if r.Watch {
			op.watch = watchChild
		}
		return op
	case *task.GetACLRequest:
		return getACLOp(r)
	case *task.SetACLRequest:
		return setACLOp(r)
	case *task.SyncRequest:
		res := &pathResponse{}
		return wireOp{code: opSync, req: &pathRequest{r.Path}, res: res, reply: func(err error) task.Response {
			if err != nil {
				return task.Response{Err: mapErr(err)}
			}
			return task.Response{Path: res.Path}
		}}
	case *task.MultiRequest:
		body, res := multiOps(r), &multiResponse{}
		return wireOp{code: opMulti, req: body, res: res, reply: func(err error) task.Response {
			if err != nil {
				return task.Response{Err: mapErr(err)}
			}
			return res.response()
		}}
	}
	panic("zkadapter: unreachable: task.Validate accepted an unknown request")
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

package zkadapter

import (
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// run performs req with go-zookeeper's blocking API. It returns the
// response without its error, go-zookeeper's error, and the watch channel
// when a watch was set.
func run(zc *zk.Conn, req task.Request) (task.Response, error, <-chan zk.Event) {
	var resp task.Response
	switch r := req.(type) {
	case *task.CreateRequest:
		var err error
		resp.Path, resp.Stat, err = create(zc, r)
		return resp, err, nil
	case *task.DeleteRequest:
		return resp, zc.Delete(r.Path, r.Version), nil
	case *task.ExistsRequest:
		var (
			ok  bool
			st  *zk.Stat
			err error
			ch  <-chan zk.Event
		)
		if r.Watch {
			ok, st, ch, err = zc.ExistsW(r.Path)
		} else {
			ok, st, err = zc.Exists(r.Path)
		}
		if err == nil && !ok {
			err = zk.ErrNoNode // the watch (ch) is set: it fires on creation
		}
		if err == nil {
			resp.Stat = stat(st)
		}
		return resp, err, ch
	case *task.GetDataRequest:
		var (
			data []byte
			st   *zk.Stat
			err  error
			ch   <-chan zk.Event
		)
		if r.Watch {
			data, st, ch, err = zc.GetW(r.Path)
		} else {
			data, st, err = zc.Get(r.Path)
		}
		if err == nil {
			resp.Data, resp.Stat = data, stat(st)
		}
		return resp, err, ch
	case *task.SetDataRequest:
		st, err := zc.Set(r.Path, r.Data, r.Version)
		if err == nil {
			resp.Stat = stat(st)
		}
		return resp, err, nil
	case *task.GetChildrenRequest:
		var (
			names []string
			st    *zk.Stat
			err   error
			ch    <-chan zk.Event
		)
		if r.Watch {
			names, st, ch, err = zc.ChildrenW(r.Path)
		} else {
			names, st, err = zc.Children(r.Path)
		}
		if err == nil {
			resp.Children, resp.Stat = names, stat(st)
			if resp.Children == nil {
				resp.Children = []string{}
			}
		}
		return resp, err, ch
	case *task.SyncRequest:
		p, err := zc.Sync(r.Path)
		resp.Path = p
		return resp, err, nil
	case *task.MultiRequest:
		resp, err := multi(zc, r)
		return resp, err, nil
	}
	// Unreachable: task.Validate rejects every other request.
	return resp, fmt.Errorf("zkadapter: unknown request %T: %w", req, task.ErrInvalidArgument), nil
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

package fakezk

import (
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// A chroot (ConnConfig.Root, ZooKeeper's "host:port/app" connect string) is
// the client's business, as in ZooKeeper's Java client: the server knows
// nothing of it. The Conn prefixes every path it sends with the root and
// strips the root from every path it hands back (a create's name, a sync's
// path, a multi's results, watch notifications), so the client sees the
// tree below the root as if it were the whole tree. These are the rules,
// which zkadapter's Config.Root is meant to keep too:
//
//   - "" and "/" mean no root (the Java client drops a "/" chroot too);
//     any other root must be a valid path (task.ValidatePath), so it has
//     no trailing slash;
//   - the request's path is validated as the client wrote it, then
//     prefixed: "/" is the root itself, "/a" is root+"/a". A sequential
//     create of "/" creates a child of the root (root+"/0000000001",
//     seen as "/0000000001", as without a root); the Java client would
//     send the root itself and create a sibling of it, outside the
//     chroot;
//   - the packet limit counts the prefixed path, the one on the wire;
//   - errors are unchanged: a task.OpError names the path the caller gave;
//   - the Conn does not create the root, nor do creates create it: under
//     a missing root a create fails with ErrNoNode (its parent is
//     missing), as on a real server. create("/") creates the root node
//     itself (its parent must exist) and delete("/") deletes it; without a
//     root both are refused as they are on "/";
//   - session events carry no path and are not touched.

// checkRoot validates a ConnConfig.Root and returns it normalised: "" for
// no root.
func checkRoot(root string) (string, error) {
	if root == "" || root == "/" {
		return "", nil
	}
	if err := task.ValidatePath(root, false); err != nil {
		return "", fmt.Errorf("fakezk: ConnConfig.Root: %w", err)
	}
	return root, nil
}

// chroot is a root path and its two mappings.
type chroot string

// full maps a client's path to the server's. sequential says the server
// appends a counter, so "/" stands for a name below the root, not for the
// root.
func (r chroot) full(p string, sequential bool) string {
	if p == "/" && !sequential {
		return string(r)
	}
	return string(r) + p
}

// strip maps a server's path to the client's.
func (r chroot) strip(p string) string {
	if p == string(r) {
		return "/"
	}
	if rest, ok := strings.CutPrefix(p, string(r)); ok && strings.HasPrefix(rest, "/") {
		return rest
	}
	return p
}

// request returns a copy of req with every path prefixed; req, which the
// caller owns, is not changed.
func (r chroot) request(req task.Request) task.Request {
	switch q := req.(type) {
	case *task.MultiRequest:
		ops := make([]task.MultiOp, len(q.Ops))
		for i, op := range q.Ops {
			ops[i] = r.request(op).(task.MultiOp)
		}
		return &task.MultiRequest{Ops: ops}
	case *task.CreateRequest:
		c := *q
		c.Path = r.full(q.Path, q.Mode.IsSequential())
		return &c
	case *task.DeleteRequest:
		c := *q
		c.Path = r.full(q.Path, false)
		return &c
	case *task.ExistsRequest:
		c := *q
		c.Path = r.full(q.Path, false)
		return &c
	case *task.GetDataRequest:
		c := *q
		c.Path = r.full(q.Path, false)
		return &c
	case *task.SetDataRequest:
		c := *q
		c.Path = r.full(q.Path, false)
		return &c
	case *task.GetChildrenRequest:
		c := *q
		c.Path = r.full(q.Path, false)
		return &c
	case *task.SyncRequest:
		c := *q
		c.Path = r.full(q.Path, false)
		return &c
	case *task.CheckRequest:
		c := *q
		c.Path = r.full(q.Path, false)
		return &c
	}
	return req
}

// deliver strips the root from the paths of a delivery to the client
// (pop calls it for a Conn with a root): a response's Path and its multi
// results' paths (the server's own, not shared), a watch notification's
// Path. Session events carry no path.
func (r chroot) deliver(it *item) {
	switch it.kind {
	case itemResp:
		if it.resp.Path != "" {
			it.resp.Path = r.strip(it.resp.Path)
		}
		for i := range it.resp.Results {
			if it.resp.Results[i].Path != "" {
				it.resp.Results[i].Path = r.strip(it.resp.Results[i].Path)
			}
		}
	case itemWatch:
		if it.ev.Path != "" {
			it.ev.Path = r.strip(it.ev.Path)
		}
	}
}

// Package chroot maps paths under a client-side root (ZooKeeper's chroot,
// the "/app" of "host:port/app"), for zkadapter's Config.Root and fakezk's
// ConnConfig.Root alike, so the two cannot drift apart. As in ZooKeeper's
// Java client the server knows nothing of it: every path a request names is
// put under the root, and the root is taken off every path handed back.
//
// The rules:
//   - "" and "/" mean no root; any other root must be a valid path
//     (task.ValidatePath), so it has no trailing slash;
//   - "/" in a request is the root itself, "/a" is root+"/a"; a sequential
//     create of "/" names a child of the root (root+"/0000000001", seen as
//     "/0000000001"), where the Java client would name a sibling of the
//     root, outside it;
//   - a path handed back that is not under the root is left as it is.
package chroot

import (
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// Check validates root and returns it normalised: "" for no root.
func Check(root string) (string, error) {
	if root == "" || root == "/" {
		return "", nil
	}
	if err := task.ValidatePath(root, false); err != nil {
		return "", err
	}
	return root, nil
}

// Full maps a client's path to the server's. sequential says the server
// appends a counter, so "/" stands for a name below the root.
func Full(root, p string, sequential bool) string {
	if root == "" {
		return p
	}
	if p == "/" && !sequential {
		return root
	}
	return root + p
}

// Strip maps a server's path to the client's.
func Strip(root, p string) string {
	if root == "" {
		return p
	}
	if p == root {
		return "/"
	}
	if rest, ok := strings.CutPrefix(p, root); ok && strings.HasPrefix(rest, "/") {
		return rest
	}
	return p
}

// Request returns a copy of req with every path under root; req is not
// changed. Every request type of package task is mapped (a test reads
// them from task's source); an unknown one is a programming error.
func Request(root string, req task.Request) task.Request {
	if root == "" {
		return req
	}
	switch r := req.(type) {
	case *task.MultiRequest:
		return multi(root, r)
	case *task.CreateRequest:
		c := *r
		c.Path = Full(root, r.Path, r.Mode.IsSequential())
		return &c
	case *task.DeleteRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.ExistsRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.GetDataRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.SetDataRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.GetChildrenRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.SyncRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.CheckRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.GetACLRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.SetACLRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.AddWatchRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	case *task.RemoveWatchesRequest:
		c := *r
		c.Path = Full(root, r.Path, false)
		return &c
	}
	panic(fmt.Sprintf("chroot: no mapping for %T", req))
}

// Response takes root off the paths of resp (a create's name, a sync's
// path, a multi's results' paths). resp's Results are changed in place.
func Response(root string, resp task.Response) task.Response {
	if root == "" {
		return resp
	}
	resp.Path = Strip(root, resp.Path)
	for i := range resp.Results {
		resp.Results[i].Path = Strip(root, resp.Results[i].Path)
	}
	return resp
}

// multiCopy is a multi mapped under a root, with room for its ops and for
// the check a fenced write puts first (zkops.Fenced): one allocation
// where there would be three.
type multiCopy struct {
	req   task.MultiRequest
	ops   [4]task.MultiOp
	check task.CheckRequest
}

// multi is Request for a multi: each op mapped as Request maps it, their
// paths under root made in one string.
func multi(root string, r *task.MultiRequest) *task.MultiRequest {
	m := new(multiCopy)
	ops := m.ops[:0]
	if len(r.Ops) > len(m.ops) {
		ops = make([]task.MultiOp, 0, len(r.Ops))
	}
	size := 0
	for _, op := range r.Ops {
		if p, seq, ok := opPath(op); ok {
			size += len(root)
			if p != "/" || seq {
				size += len(p)
			}
		}
	}
	var b strings.Builder
	b.Grow(size)
	for _, op := range r.Ops {
		if p, seq, ok := opPath(op); ok {
			b.WriteString(root)
			if p != "/" || seq {
				b.WriteString(p)
			}
		}
	}
	all, at := b.String(), 0
	checked := false // m.check holds one
	for _, op := range r.Ops {
		p, seq, ok := opPath(op)
		if !ok {
			ops = append(ops, Request(root, op).(task.MultiOp)) // panics: no mapping
			continue
		}
		n := len(root)
		if p != "/" || seq {
			n += len(p)
		}
		full := all[at : at+n]
		at += n
		switch r := op.(type) {
		case *task.CreateRequest:
			c := *r
			c.Path = full
			ops = append(ops, &c)
		case *task.DeleteRequest:
			c := *r
			c.Path = full
			ops = append(ops, &c)
		case *task.SetDataRequest:
			c := *r
			c.Path = full
			ops = append(ops, &c)
		case *task.CheckRequest:
			c := &m.check
			if checked {
				c = new(task.CheckRequest)
			}
			checked = true
			*c = *r
			c.Path = full
			ops = append(ops, c)
		}
	}
	m.req.Ops = ops
	return &m.req
}

// opPath returns the path of a multi's op and whether the server appends
// a counter to it; ok is false for an op multi does not map (nil, or a
// type of no multi op: Request panics on it).
func opPath(op task.MultiOp) (p string, sequential, ok bool) {
	switch r := op.(type) {
	case *task.CreateRequest:
		if r != nil {
			return r.Path, r.Mode.IsSequential(), true
		}
	case *task.DeleteRequest:
		if r != nil {
			return r.Path, false, true
		}
	case *task.SetDataRequest:
		if r != nil {
			return r.Path, false, true
		}
	case *task.CheckRequest:
		if r != nil {
			return r.Path, false, true
		}
	}
	return "", false, false
}

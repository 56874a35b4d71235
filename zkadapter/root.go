package zkadapter

import (
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// A Conn with Config.Root (ZooKeeper's chroot, the "/app" of
// "host:port/app") puts every path of a request under the root and takes
// the root off every path it hands back (a create's name, a sync's path,
// a multi's results, watch events), as ZooKeeper's own client does: a
// user of the Conn sees the root as "/". The root node itself must exist
// (the client does not create it); without it, creates directly under the
// root fail with task.ErrNoNode. "" or "/" means no root. A sequential
// create of "/" names a child of the root.

// ParseConnectString splits a ZooKeeper connect string, such as
// "zk1:2181,zk2:2181,zk3:2181/app", into its servers and its root ("" when
// it has none).
func ParseConnectString(s string) (servers []string, root string, err error) {
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, root = s[:i], s[i:]
		if root == "/" {
			root = ""
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", &ConfigError{"Servers", fmt.Sprintf("connect string %q names no server", s)}
	}
	if root != "" {
		if err := validateRoot(root); err != nil {
			return nil, "", &ConfigError{"Root", err.Error()}
		}
	}
	return servers, root, nil
}

func validateRoot(root string) error {
	if err := task.ValidatePath(root, false); err != nil {
		return err
	}
	if root == "/" {
		return fmt.Errorf("%q: use \"\" for no root", root)
	}
	return nil
}

// under returns p under root.
func under(root, p string) string {
	if p == "/" {
		return root
	}
	return root + p
}

// strip takes root off a path the server handed back.
func strip(root, p string) string {
	if root == "" {
		return p
	}
	if p == root {
		return "/"
	}
	if strings.HasPrefix(p, root) && len(p) > len(root) && p[len(root)] == '/' {
		return p[len(root):]
	}
	return p
}

// withRoot returns a copy of req with every path under root.
func withRoot(root string, req task.Request) task.Request {
	switch r := req.(type) {
	case *task.CreateRequest:
		c := *r
		c.Path = under(root, r.Path)
		if r.Path == "/" && r.Mode.IsSequential() {
			// A sequential create of "/" names a child of the root, as
			// fakezk does (ZooKeeper's Java client would name a sibling
			// of the root, outside it).
			c.Path = root + "/"
		}
		return &c
	case *task.DeleteRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.ExistsRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.GetDataRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.SetDataRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.GetChildrenRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.SyncRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.CheckRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.GetACLRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.SetACLRequest:
		c := *r
		c.Path = under(root, r.Path)
		return &c
	case *task.MultiRequest:
		ops := make([]task.MultiOp, len(r.Ops))
		for i, op := range r.Ops {
			ops[i] = withRoot(root, op).(task.MultiOp)
		}
		return &task.MultiRequest{Ops: ops}
	}
	// Unreachable: task.Validate accepts only the requests above, and a
	// test (TestRootCoversEveryRequest) keeps the list complete.
	panic(fmt.Sprintf("zkadapter: no root mapping for %T", req))
}

// stripResponse takes root off the paths of resp.
func stripResponse(root string, resp task.Response) task.Response {
	resp.Path = strip(root, resp.Path)
	for i := range resp.Results {
		resp.Results[i].Path = strip(root, resp.Results[i].Path)
	}
	return resp
}

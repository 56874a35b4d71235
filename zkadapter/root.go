package zkadapter

import (
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/internal/chroot"
	"github.com/zkflow/zkflow/task"
)

// A Conn with Config.Root (ZooKeeper's chroot, the "/app" of
// "host:port/app") puts every path of a request under the root and takes
// the root off every path it hands back (a create's name, a sync's path,
// a multi's results, watch events), as ZooKeeper's own client does: a
// user of the Conn sees the root as "/". The root node itself must exist
// (the client does not create it): Dial checks, and fails with
// task.ErrNoNode when it is missing; one deleted later makes creates
// directly under the root fail with task.ErrNoNode. "" or "/" means no root. A sequential
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
	_, err := chroot.Check(root)
	return err
}

// withRoot returns a copy of req with every path under root
// (internal/chroot, shared with fakezk).
func withRoot(root string, req task.Request) task.Request { return chroot.Request(root, req) }

// strip takes root off a path the server handed back.
func strip(root, p string) string { return chroot.Strip(root, p) }

// stripResponse takes root off the paths of resp.
func stripResponse(root string, resp task.Response) task.Response {
	return chroot.Response(root, resp)
}

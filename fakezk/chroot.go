package fakezk

import (
	"fmt"

	"github.com/zkflow/zkflow/internal/chroot"
	"github.com/zkflow/zkflow/task"
)

// A chroot (ConnConfig.Root, ZooKeeper's "host:port/app" connect string) is
// the client's business, as in ZooKeeper's Java client: the server knows
// nothing of it. The Conn prefixes every path it sends with the root and
// strips the root from every path it hands back (a create's name, a sync's
// path, a multi's results, watch notifications), so the client sees the
// tree below the root as if it were the whole tree. The mapping is
// internal/chroot's, which zkadapter's Config.Root uses too. The rules:
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
	r, err := chroot.Check(root)
	if err != nil {
		return "", fmt.Errorf("fakezk: ConnConfig.Root: %w", err)
	}
	return r, nil
}

// rooted is a Conn's root, with the mappings internal/chroot shares with
// zkadapter.
type rooted string

// request returns a copy of req with every path under the root; req, which
// the caller owns, is not changed.
func (r rooted) request(req task.Request) task.Request { return chroot.Request(string(r), req) }

// deliver strips the root from the paths of a delivery to the client
// (pop calls it for a Conn with a root): a response's Path and its multi
// results' paths (the server's own, not shared), a watch notification's
// Path. Session events carry no path.
func (r rooted) deliver(it *item) {
	switch it.kind {
	case itemResp:
		it.resp = chroot.Response(string(r), it.resp)
	case itemWatch:
		it.ev.Path = chroot.Strip(string(r), it.ev.Path)
	}
}

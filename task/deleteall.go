package task

import (
	"errors"
	"fmt"
	"strings"
)

// DeleteAll deletes path and every node under it, children first
// (ZooKeeper deletes only a node without children), as Curator's
// deletingChildrenIfNeeded and kazoo's recursive delete do, and succeeds
// with the number of nodes it deleted. A node already gone is passed
// over (DeleteAll of a missing path succeeds with 0); a node that gained
// a child after it was listed (ErrNotEmpty: an ephemeral node of a
// session still closing, a creator at work) is listed again, until the
// flow's scope ends, so a tree that something keeps adding to is deleted
// only once that stops. It is not atomic: nodes are deleted one request
// at a time, and an error (ErrNoAuth on a node, ErrConnectionLoss) ends
// it with the nodes deleted so far gone; it may be run again, as every
// request is one attempt (wrap it in combinators.Retry to settle
// connection losses). "/" is refused with ErrInvalidArgument (the root
// is not deleted, and the whole tree is too much to ask for by mistake),
// and so is a path under /zookeeper (the server's own).
func DeleteAll(path string) Task[int] {
	if path == "/" || path == "/zookeeper" || strings.HasPrefix(path, "/zookeeper/") {
		return Fail[int](fmt.Errorf("task: DeleteAll %q: %w: the root and /zookeeper are not deleted", path, ErrInvalidArgument))
	}
	return func(s *Scope, k Cont[int]) {
		deleteAll(s, path, 0, k)
	}
}

// deleteAll deletes path's children, one after another, then path;
// deleted counts the nodes deleted so far under path.
func deleteAll(s *Scope, path string, deleted int, k Cont[int]) {
	Run(s, Children(path), func(cl ChildList, err error) {
		switch {
		case errors.Is(err, ErrNoNode):
			k(deleted, nil)
			return
		case err != nil:
			k(deleted, err)
			return
		}
		var next func(i, deleted int)
		next = func(i, deleted int) {
			if i < len(cl.Names) {
				deleteAll(s, strings.TrimSuffix(path, "/")+"/"+cl.Names[i], 0, func(n int, err error) {
					if err != nil {
						k(deleted+n, err)
						return
					}
					next(i+1, deleted+n)
				})
				return
			}
			Run(s, Delete(path, AnyVersion), func(_ Unit, err error) {
				switch {
				case err == nil:
					k(deleted+1, nil)
				case errors.Is(err, ErrNoNode):
					k(deleted, nil) // deleted by another meanwhile
				case errors.Is(err, ErrNotEmpty):
					deleteAll(s, path, deleted, k) // a child came meanwhile: list again
				default:
					k(deleted, err)
				}
			})
		}
		next(0, deleted)
	})
}

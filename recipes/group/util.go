package group

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// retry is the recipes' shared policy for single operations whose outcome
// a retry settles (connection loss, not sent); see zkops.Retry.
var retry = zkops.Retry

// errNil is the error of a method called on a nil value.
func errNil(what string) error {
	return fmt.Errorf("group: nil %s: %w", what, task.ErrInvalidArgument)
}

// ValidateID checks a member id: it becomes the name of the member's node,
// so it must be one valid path component (no "/", not "." or ".."). The
// error wraps task.ErrInvalidPath.
func ValidateID(id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("group: member id %q: %w", id, task.ErrInvalidPath)
	}
	if err := task.ValidatePath("/"+id, false); err != nil {
		return fmt.Errorf("group: member id %q: %w", id, err)
	}
	return nil
}

// deleteIfOurs deletes path if it is an ephemeral node of session sess,
// retrying past connection loss. If the flow runs on another session than
// sess, sess has ended and its ephemerals went with it: nothing to do. A
// node that is gone, or owned by another session, is left alone, also
// after a lost reply: the incarnation read is the one deleted
// (zkops.DeleteOwned), never a node created at path since.
func deleteIfOurs(path string, sess task.Session) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		task.Run(s, zkops.DeleteOwned(path, sess.ID), k)
	}
}

// wakeUp is a watch's end as a wake-up: a watch another user of the
// session took away (RemoveWatches: a recursive cache of the path
// stopping, say) is one more, and the flow reads again, which watches
// again; any other error is the watch's.
func wakeUp(err error) error {
	if errors.Is(err, task.ErrWatchRemoved) {
		return nil
	}
	return err
}

// endedOK turns the end of the session into success for a cleanup: the
// session's ephemeral nodes went with it.
func endedOK(err error) error {
	if errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
		return nil
	}
	return err
}

// joinCleanups counts, per path, the cleanups of failed Joins still
// running on one runtime (task.RuntimeValue; executor goroutine only). A
// failed Join whose create may have been applied deletes the node of its
// session at path, in the background; a later Join of the same path on
// the same session waits until those cleanups end before it creates
// (afterCleanups), or the late cleanup would delete the node that Join
// made (group seed 71623877407702). A cleanup whose delete an ACL refused
// ends only once the node is gone (zkops.UntilAllowed), not at the first
// refusal (group/shared-id seed 111782865875062).
type joinCleanups map[string]*cleanupWait

type cleanupWait struct {
	n       int
	waiters []func()
}

var joinCleanupsKey byte

func cleanupsOf(rt task.Runtime) joinCleanups {
	return task.RuntimeValue(rt, &joinCleanupsKey, func() joinCleanups { return joinCleanups{} })
}

// startCleanup counts a cleanup of path; done ends it, and the last one
// to end wakes the Joins waiting on path.
func startCleanup(rt task.Runtime, path string) (done func()) {
	cs := cleanupsOf(rt)
	w := cs[path]
	if w == nil {
		w = &cleanupWait{}
		cs[path] = w
	}
	w.n++
	return func() {
		if w.n--; w.n > 0 {
			return
		}
		delete(cs, path)
		for _, wake := range w.waiters {
			rt.Schedule(wake)
		}
		w.waiters = nil
	}
}

// afterCleanups waits until no cleanup of a failed Join of path is
// running on the flow's runtime.
func afterCleanups(path string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		w := cleanupsOf(s.Runtime())[path]
		if w == nil {
			k(task.Unit{}, nil)
			return
		}
		task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
			w.waiters = append(w.waiters, func() { resume(task.Unit{}, nil) })
			return nil
		})
	}
}

// leavingNodes holds, on one runtime (task.RuntimeValue), the member
// nodes a Leave is deleting: their session's epoch, path and czxid. Such
// a node is never another member's of the id: a Join or a keeper whose
// create's reply was lost finds it at its path, of its own session, but
// its create did not make it (the create failed with ErrNodeExists in
// truth), and the Leave's delete would take it from the member that took
// it (TestJoinWaitsForABackgroundLeave, TestJoinWaitsForARefusedLeave):
// it is waited out, as a node of another member. An entry goes when its
// delete succeeds, or when a Leave on a later session adds one (a delete
// an ACL refused goes on in the background, zkops.KeepDeleting, and its
// node may stay until its session ends). Executor goroutine only.
type leavingNodes map[leavingNode]struct{}

type leavingNode struct {
	epoch uint64
	path  string
	czxid int64
}

var leavingKey byte

func leavingOf(rt task.Runtime) leavingNodes {
	return task.RuntimeValue(rt, &leavingKey, func() leavingNodes { return leavingNodes{} })
}

// add notes n as being deleted, and forgets the nodes of older sessions
// (they went with their session).
func (l leavingNodes) add(n leavingNode) {
	for o := range l {
		if o.epoch != n.epoch {
			delete(l, o)
		}
	}
	l[n] = struct{}{}
}

// leaving reports whether st, a node of the flow's session at path, is
// one a Leave on this runtime is deleting.
func leaving(s *task.Scope, path string, st *task.Stat) bool {
	l := leavingOf(s.Runtime())
	if len(l) == 0 {
		return false
	}
	_, ok := l[leavingNode{s.Session().Epoch, path, st.Czxid}]
	return ok
}

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

// endedOK turns the end of the session into success for a cleanup: the
// session's ephemeral nodes went with it.
func endedOK(err error) error {
	if errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
		return nil
	}
	return err
}

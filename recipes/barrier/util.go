package barrier

import (
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// retry is the recipes' shared policy for single operations whose outcome
// a retry settles (connection loss, not sent); see zkops.Retry.
var retry = zkops.Retry

func validDir(what, p string) error {
	if err := task.ValidatePath(p, false); err != nil {
		return fmt.Errorf("barrier: %s %q: %w", what, p, err)
	}
	if p == "/" || strings.HasPrefix(p, "/zookeeper/") || p == "/zookeeper" {
		return fmt.Errorf("barrier: %s %q: reserved: %w", what, p, task.ErrInvalidPath)
	}
	return nil
}

// errNil is the error of a method called on a nil value.
func errNil(what string) error {
	return fmt.Errorf("barrier: nil %s: %w", what, task.ErrInvalidArgument)
}

// newID returns a 128-bit identifier in UUID text form from two draws of
// the executor's seeded source mixed with the session's id (zkops.NewID, zkops.Draws).
var newID = zkops.NewID

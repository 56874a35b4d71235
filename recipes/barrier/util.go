package barrier

import (
	"errors"
	"fmt"
	"strings"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// retry repeats an operation whose outcome a retry settles (connection
// loss, not sent). After connection loss the retry waits for the reconnect
// (the executor's task queue is paused); the backoff only spaces retries
// of a connection that keeps failing. Scope deadlines still apply.
var retry = c.Policy{Backoff: c.Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}}

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

// ensurePath creates path and its missing ancestors as persistent nodes;
// nodes already there are fine.
func ensurePath(path string) task.Task[task.Unit] {
	if path == "/" || path == "" {
		return task.Done
	}
	create := c.Map(c.Catch(c.Retry(task.Create(path, nil, task.Persistent), retry), func(err error) task.Task[string] {
		if errors.Is(err, task.ErrNodeExists) {
			return task.Value(path)
		}
		return task.Fail[string](err)
	}), func(string) task.Unit { return task.Unit{} })
	return c.Catch(create, func(err error) task.Task[task.Unit] {
		if !errors.Is(err, task.ErrNoNode) {
			return task.Fail[task.Unit](err)
		}
		return c.Seq(ensurePath(task.Parent(path)), create)
	})
}

// deleteNode deletes path, retrying past connection loss. A node already
// gone, or a session that ended (taking its ephemeral nodes), is success.
func deleteNode(path string) task.Task[task.Unit] {
	return c.Catch(c.Retry(task.Delete(path, task.AnyVersion), retry), func(err error) task.Task[task.Unit] {
		if errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
			return task.Done
		}
		return task.Fail[task.Unit](err)
	})
}

// newID returns a 128-bit identifier in UUID text form from two draws of
// the executor's seeded source.
func newID(hi, lo uint64) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
}

package election

import (
	"fmt"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// retry repeats an operation whose outcome a retry settles (connection
// loss, not sent). After connection loss the retry waits for the reconnect
// (the executor's task queue is paused); the backoff only spaces retries
// of a connection that keeps failing. Scope deadlines still apply.
var retry = c.Policy{Backoff: c.Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}}

// Election is leader election among candidates under one ZooKeeper
// directory. An Election holds no state of its own: every Campaign is a
// new candidate, so one Election may be shared by any number of flows and
// executors.
type Election struct {
	dir string
	cfg Config
}

// New returns the election whose candidates live under dir. The directory
// and its ancestors are created (persistent) on first use.
func New(dir string, cfg Config) (*Election, error) {
	if err := task.ValidatePath(dir, false); err != nil {
		return nil, fmt.Errorf("election: directory %q: %w", dir, err)
	}
	if dir == "/" {
		return nil, fmt.Errorf("election: directory %q: %w", dir, task.ErrInvalidPath)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Election{dir: dir, cfg: cfg}, nil
}

// Dir is the election's directory.
func (e *Election) Dir() string { return e.dir }

func (e *Election) child(name string) string { return e.dir + "/" + name }

// Campaign returns a task that waits until this candidate leads and
// succeeds with its leadership. See the package documentation for the
// protocol. It fails with the scope's error when the scope's deadline
// passes or it is canceled, with task.ErrSessionExpired when the session
// ends (the candidate node went with it), with ErrLost when someone else
// deleted the candidate node, or with an operation's error that a retry
// cannot settle. In every failure the candidate node, if it was created,
// is deleted by a cleanup flow of its own that outlives the deadline and
// retries past connection loss.
func (e *Election) Campaign() task.Task[*Leadership] {
	return task.Fail[*Leadership](fmt.Errorf("election: Campaign not implemented yet: %w", task.ErrUnimplemented))
}

// Leader returns a task that reads the data of the current leader (the
// lowest candidate), or fails with ErrNoLeader.
func (e *Election) Leader() task.Task[[]byte] {
	return task.Fail[[]byte](fmt.Errorf("election: Leader not implemented yet: %w", task.ErrUnimplemented))
}

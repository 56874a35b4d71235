package election

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Master is the simpler "/master" pattern: whoever creates one ephemeral
// node leads; the others watch it and run again when it is deleted. Every
// waiter is woken by a deletion (a herd, bounded by the number of
// candidates); use Election for many candidates. A Master holds no state
// of its own.
type Master struct {
	path string
	cfg  Config
}

// NewMaster returns the master election on node path (its parent is
// created, persistent, on first use).
func NewMaster(path string, cfg Config) (*Master, error) {
	if err := task.ValidatePath(path, false); err != nil {
		return nil, fmt.Errorf("election: master node %q: %w", path, err)
	}
	if path == "/" {
		return nil, fmt.Errorf("election: master node %q: %w", path, task.ErrInvalidPath)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Master{path: path, cfg: cfg}, nil
}

// Path is the master node's path.
func (m *Master) Path() string { return m.path }

// Campaign returns a task that waits until this candidate is master and
// succeeds with its leadership. It fails with the scope's error on
// deadline or cancel (a master node we created is then deleted by a
// cleanup that outlives the deadline), with task.ErrSessionExpired when
// the session ends, or with an operation's error a retry cannot settle.
func (m *Master) Campaign() task.Task[*Leadership] {
	return task.Fail[*Leadership](fmt.Errorf("election: Master.Campaign not implemented yet: %w", task.ErrUnimplemented))
}

// Leader returns a task that reads the master node's data, or fails with
// ErrNoLeader when there is no master.
func (m *Master) Leader() task.Task[[]byte] {
	return task.Fail[[]byte](fmt.Errorf("election: Master.Leader not implemented yet: %w", task.ErrUnimplemented))
}

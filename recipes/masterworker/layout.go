package masterworker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Errors of the recipe, tested with errors.Is.
var (
	// ErrTaskFailed: the handler of the task failed; Result.Err wraps it
	// with the handler's message.
	ErrTaskFailed = errors.New("masterworker: task failed")
	// ErrBadStatus: a status node's data is not in the recipe's format
	// (written by someone else).
	ErrBadStatus = errors.New("masterworker: malformed status")
	// ErrWorkerTaken: a worker id is registered by a live session that is
	// not ours and did not go away (only reported when the wait for it is
	// cut short by the scope).
	ErrWorkerTaken = errors.New("masterworker: worker id registered by another session")
)

// retry repeats an operation whose outcome a retry settles (connection
// loss, not sent). After connection loss the retry waits for the
// reconnect (the executor's task queue is paused); the backoff only
// spaces retries of a connection that keeps failing.
var retry = c.Policy{Backoff: c.Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}}

// System is one master-worker installation: the nodes under one root.
// It holds no state of its own, so one System may be shared by any number
// of masters, workers and clients on any executors.
type System struct {
	root  string
	acl   task.ACLProvider
	setup task.Task[task.Unit] // Setup's task (a value: built once, in New)
	// The directories' paths, made once in New (every listing, create
	// and status read names one).
	master, workers, tasks, assign, status string
}

// New returns the system whose nodes live under root (see the package
// documentation for the layout). root is created, with its five
// directories, by Setup, which every Master and Worker runs first.
// WithACL sets the ACL of the nodes the system creates.
func New(root string, opts ...Option) (*System, error) {
	if err := task.ValidatePath(root, false); err != nil {
		return nil, fmt.Errorf("masterworker: root %q: %w", root, err)
	}
	if root == "/" {
		root = ""
	}
	sys := &System{root: root, master: root + "/master", workers: root + "/workers", tasks: root + "/tasks", assign: root + "/assign", status: root + "/status"}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("masterworker: nil option: %w", task.ErrInvalidArgument)
		}
		o.apply(sys)
	}
	sys.setup = sys.buildSetup()
	return sys, nil
}

// Root is the system's root node.
func (sys *System) Root() string {
	if sys.root == "" {
		return "/"
	}
	return sys.root
}

// MasterPath is the ephemeral node the primary master holds.
func (sys *System) MasterPath() string { return sys.made(sys.master, "/master") }

// WorkersPath is the directory of the workers' ephemeral registrations.
func (sys *System) WorkersPath() string { return sys.made(sys.workers, "/workers") }

// TasksPath is the directory of tasks not yet assigned.
func (sys *System) TasksPath() string { return sys.made(sys.tasks, "/tasks") }

// AssignRoot is the directory that holds one assignment directory per
// worker.
func (sys *System) AssignRoot() string { return sys.made(sys.assign, "/assign") }

// AssignPath is worker's assignment directory.
func (sys *System) AssignPath(worker string) string { return sys.root + "/assign/" + worker }

// StatusPath is the status node of the named task.
func (sys *System) StatusPath(name string) string { return sys.root + "/status/" + name }

// StatusRoot is the directory of the status nodes.
func (sys *System) StatusRoot() string { return sys.made(sys.status, "/status") }

// made returns path, a directory's path New made, or root+dir for a
// System not made by New.
func (sys *System) made(path, dir string) string {
	if path != "" {
		return path
	}
	return sys.root + dir
}

// Setup creates the root and the five directories (persistent) where they
// are missing. It is idempotent; Master and Worker run it first, and
// Submit runs it when the tasks directory is missing.
func (sys *System) Setup() task.Task[task.Unit] {
	if sys.setup != nil {
		return sys.setup
	}
	return sys.buildSetup()
}

// buildSetup builds Setup's task.
func (sys *System) buildSetup() task.Task[task.Unit] {
	var dirs []string
	if sys.root != "" {
		// ancestors of the root, then the root
		parts := strings.Split(sys.root[1:], "/")
		for i := range parts {
			dirs = append(dirs, "/"+strings.Join(parts[:i+1], "/"))
		}
	}
	dirs = append(dirs, sys.WorkersPath(), sys.TasksPath(), sys.AssignRoot(), sys.StatusRoot())
	ts := make([]task.Task[task.Unit], len(dirs))
	for i, d := range dirs {
		ts[i] = sys.mkdir(d)
	}
	return seqAll(ts)
}

// mkdir creates a persistent node; one that exists already is fine. A
// missing parent below the system's root (an empty /assign or /status an
// operator deleted) is made first.
func (sys *System) mkdir(path string) task.Task[task.Unit] {
	create := c.Retry(zkops.Create(path, nil, task.Persistent, sys.acl), retry)
	return c.Catch(c.Map(create, func(string) task.Unit { return task.Unit{} }), func(err error) task.Task[task.Unit] {
		switch {
		case errors.Is(err, task.ErrNodeExists):
			return task.Done
		case errors.Is(err, task.ErrNoNode) && len(task.Parent(path)) > len(sys.root) && !canary.On(bugNoDirAgain):
			return c.Seq(sys.mkdir(task.Parent(path)), sys.mkdir(path))
		}
		return task.Fail[task.Unit](err)
	})
}

// seqAll runs ts one after another and stops at the first error. Each
// step (ts[i], then i+1) is made once, when seqAll is: Setup's runs
// again and again.
func seqAll(ts []task.Task[task.Unit]) task.Task[task.Unit] {
	steps := make([]task.Task[int], len(ts))
	for i, t := range ts {
		steps[i] = c.Map(t, func(task.Unit) int { return i + 1 })
	}
	i := c.Loop(0, func(i int) bool { return i < len(steps) }, func(i int) task.Task[int] { return steps[i] })
	return c.Map(i, func(int) task.Unit { return task.Unit{} })
}

// checkName checks an id that becomes one path component.
func checkName(what, id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("masterworker: %s %q: %w", what, id, task.ErrInvalidArgument)
	}
	if err := task.ValidatePath("/"+id, false); err != nil {
		return fmt.Errorf("masterworker: %s %q: %w", what, id, err)
	}
	return nil
}

// Result is what a worker wrote to a task's status node: the handler's
// value, or its failure.
type Result struct {
	// Data is the handler's value, or its error message if Failed.
	Data []byte
	// Failed says the handler failed.
	Failed bool
}

// Err returns nil, or an error wrapping ErrTaskFailed with the handler's
// message.
func (r Result) Err() error {
	if !r.Failed {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrTaskFailed, r.Data)
}

// Status data: one tag byte, then the value or the error message.
const (
	tagOK     = 'o'
	tagFailed = 'e'
)

func encodeResult(r Result) []byte {
	tag := byte(tagOK)
	if r.Failed {
		tag = tagFailed
	}
	return append([]byte{tag}, r.Data...)
}

func decodeResult(path string, b []byte) (Result, error) {
	if len(b) == 0 || (b[0] != tagOK && b[0] != tagFailed) {
		return Result{}, fmt.Errorf("%w: %s", ErrBadStatus, path)
	}
	return Result{Data: append([]byte(nil), b[1:]...), Failed: b[0] == tagFailed}, nil
}

// Job is a task as a worker's handler receives it.
type Job struct {
	// Name is the task's node name (unique, with the submitter's id).
	Name string
	// Data is what the client submitted.
	Data []byte
}

// Handler executes a job on the worker's executor and succeeds with the
// value to write to its status, or fails (the failure is written to the
// status, except for task.ErrSessionExpired, task.ErrClosed and
// task.ErrCanceled, which stop the worker instead, leaving the job
// assigned). A value, or an error's message, over the server's limit is
// written as a short failed status that says so. A handler may run more than once for one task (see the
// package documentation); only one status is ever written.
type Handler func(j Job) task.Task[[]byte]

package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Get returns path's data and Stat. Get and the methods below are the
// blocking face of ZooKeeper's plain operations: each is one request on
// the executor's session, waited for as Await waits (ex.Get(ctx, p) is
// Await(ctx, ex, task.Get(p))). Each makes one attempt: a
// task.ErrConnectionLoss or ctx's end on a write means its outcome is
// unknown, as with any ZooKeeper client; wrap the task in
// combinators.Retry, or use a recipe, for more. Errors are the task
// package's (task.ErrNoNode, task.ErrBadVersion, ...); the refusals are
// Await's (ErrOnExecutor, ErrNilExecutor, task.ErrClosed).
func (e *Executor) Get(ctx context.Context, path string) (task.Data, error) {
	v, err := Await(ctx, e, task.Get(path))
	return v, named("get", path, err)
}

// Set writes data to path if its version matches (task.AnyVersion: any)
// and returns the node's new Stat.
func (e *Executor) Set(ctx context.Context, path string, data []byte, version int32) (task.Stat, error) {
	v, err := Await(ctx, e, task.Set(path, data, version))
	return v, named("set", path, err)
}

// Create creates path with data and the open ACL, and returns the name
// the server gave it (with its sequence number for a sequential mode).
// task.CreateWith sets an ACL or a TTL.
func (e *Executor) Create(ctx context.Context, path string, data []byte, mode task.CreateMode) (string, error) {
	v, err := Await(ctx, e, task.Create(path, data, mode))
	return v, named("create", path, err)
}

// Delete deletes path if its version matches (task.AnyVersion: any).
func (e *Executor) Delete(ctx context.Context, path string, version int32) error {
	_, err := Await(ctx, e, task.Delete(path, version))
	return named("delete", path, err)
}

// DeleteAll deletes path and every node under it, children first, and
// returns how many nodes it deleted (task.DeleteAll says what happens to
// a node gone meanwhile, one that gains a child, and an error midway).
func (e *Executor) DeleteAll(ctx context.Context, path string) (int, error) {
	v, err := Await(ctx, e, task.DeleteAll(path))
	return v, named("delete all", path, err)
}

// Children returns the names of path's children, in no particular order,
// with path's Stat.
func (e *Executor) Children(ctx context.Context, path string) (task.ChildList, error) {
	v, err := Await(ctx, e, task.Children(path))
	return v, named("children", path, err)
}

// Exists returns path's Stat, or nil and no error if there is no node.
func (e *Executor) Exists(ctx context.Context, path string) (*task.Stat, error) {
	v, err := Await(ctx, e, task.Exists(path))
	return v, named("exists", path, err)
}

// Multi applies ops atomically (all or none) and returns their results.
func (e *Executor) Multi(ctx context.Context, ops ...task.MultiOp) ([]task.MultiResult, error) {
	v, err := Await(ctx, e, task.Multi(ops...))
	return v, named("multi", "", err)
}

// Sync waits until the server the session is on has caught up with the
// leader, for path.
func (e *Executor) Sync(ctx context.Context, path string) error {
	_, err := Await(ctx, e, task.Sync(path))
	return named("sync", path, err)
}

// named puts the operation and its path in front of an error that is the
// context's end (the server's errors name them already).
func named(op, path string, err error) error {
	if err == nil || !(errors.Is(err, task.ErrDeadlineExceeded) || errors.Is(err, task.ErrCanceled)) {
		return err
	}
	var oe *task.OpError
	if errors.As(err, &oe) {
		return err // a request's own deadline: it says which
	}
	if path != "" {
		op += " " + path
	}
	return fmt.Errorf("executor.%s: %w", op, err)
}

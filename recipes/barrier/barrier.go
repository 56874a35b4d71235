package barrier

import (
	"errors"
	"fmt"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Known bugs a test switches back on (internal/canary), to show the
// simulation catches them.
const (
	// bugTrustEvent: Wait takes any wake-up of its watch (a data change
	// too) for the removal of the barrier, without checking again.
	bugTrustEvent canary.Name = "barrier/trust-event"
	// bugLossAsGone: Wait takes connection loss on its exists for an
	// absent node.
	bugLossAsGone canary.Name = "barrier/loss-as-gone"
	// bugRemoveOnceInBackground: Client.Remove makes the delete again on
	// the next session only while its caller waits: once ctx has ended,
	// a delete cut by the session's expiry is not made again, and the
	// barrier (a persistent node) stays up for good.
	bugRemoveOnceInBackground canary.Name = "barrier/remove-once-in-background"
	// bugWaitWithoutSync: Wait's first check reads the barrier without a
	// sync: a server lagging behind the leader can tell it the barrier,
	// set before Wait began, is not there.
	bugWaitWithoutSync canary.Name = "barrier/wait-without-sync"
)

// Barrier is a node that, while it exists, holds every Wait. One flow
// (the controller) Sets it and later Removes it; any number of flows Wait
// for it to be gone. A Barrier holds no state: one value may be shared by
// any number of flows and executors.
type Barrier struct {
	path string
	acl  task.ACLProvider
}

// New returns the barrier whose node is path. It fails with an error
// wrapping task.ErrInvalidPath if path breaks ZooKeeper's rules or is the
// root or under /zookeeper. WithACL sets the ACL of the nodes it creates.
func New(path string, opts ...Option) (*Barrier, error) {
	if err := validDir("barrier node", path); err != nil {
		return nil, err
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Barrier{path: path, acl: o.acl}, nil
}

// Path is the barrier's node.
func (b *Barrier) Path() string { return b.path }

// Set returns a task that raises the barrier: it creates the node
// (persistent, with data) and any missing ancestors. A node already there
// is success and keeps its data (Set is idempotent, so a create whose reply
// was lost is simply retried). Errors: task.ErrDataTooLarge for data over
// the limit, and operation errors a retry cannot settle.
func (b *Barrier) Set(data []byte) task.Task[task.Unit] {
	if b == nil {
		return task.Fail[task.Unit](errNil("Barrier"))
	}
	create := c.Map(c.Retry(zkops.Create(b.path, data, task.Persistent, b.acl), retry), func(string) task.Unit { return task.Unit{} })
	return c.Catch(create, func(err error) task.Task[task.Unit] {
		switch {
		case errors.Is(err, task.ErrNodeExists):
			return task.Done
		case errors.Is(err, task.ErrNoNode):
			return c.Seq(zkops.EnsurePath(task.Parent(b.path), b.acl), b.Set(data))
		}
		return task.Fail[task.Unit](err)
	})
}

// Remove returns a task that lifts the barrier: it deletes the node,
// retrying past connection loss; a node already gone is success. Waiters
// are woken by their watches. A node with children fails with an error
// wrapping task.ErrNotEmpty.
func (b *Barrier) Remove() task.Task[task.Unit] {
	if b == nil {
		return task.Fail[task.Unit](errNil("Barrier"))
	}
	return c.Catch(c.Retry(task.Delete(b.path, task.AnyVersion), retry), func(err error) task.Task[task.Unit] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Done
		}
		return task.Fail[task.Unit](err)
	})
}

// Wait returns a task that succeeds once the barrier's node does not
// exist. It checks with exists-and-watch; while the node is there it waits
// for the watch, and after every wake-up it checks again with a new watch
// (a wake-up is only a hint: the node may have changed, or been removed and
// set again). Connection loss is retried after the reconnect. It fails
// with the scope's error (deadline, cancel), or task.ErrSessionExpired or
// task.ErrClosed when the session ends; waiting again on the next session
// is safe (Client.Wait does so).
func (b *Barrier) Wait() task.Task[task.Unit] {
	if b == nil {
		return task.Fail[task.Unit](errNil("Barrier"))
	}
	exists := c.Catch(task.ExistsW(b.path), func(err error) task.Task[task.StatWatch] {
		if canary.On(bugLossAsGone) && errors.Is(err, task.ErrConnectionLoss) {
			return task.Value(task.StatWatch{})
		}
		return task.Fail[task.StatWatch](err)
	})
	check := c.Retry(exists, retry)
	// The first check follows a sync: the session's server may lag
	// behind the leader, and a read from before the barrier was set would
	// let us pass it. The two are sent together (zkops.AfterSync: the
	// session's requests are served in order). A later check follows a
	// notification, which the server sends only once it has applied the
	// change.
	first := c.Retry(zkops.AfterSync(b.path, exists), retry)
	if canary.On(bugWaitWithoutSync) {
		first = check
	}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		var round func(task.Task[task.StatWatch])
		round = func(check task.Task[task.StatWatch]) {
			task.Run(s, check, func(sw task.StatWatch, err error) {
				if err != nil {
					k(task.Unit{}, fmt.Errorf("barrier: wait %s: %w", b.path, err))
					return
				}
				if sw.Stat == nil {
					k(task.Unit{}, nil)
					return
				}
				task.Run(s, sw.Watch.Wait(), func(_ task.Event, err error) {
					// A watch another user of the session took away
					// (RemoveWatches: a recursive cache of the path
					// stopping) is one more wake-up: check again.
					if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
						k(task.Unit{}, fmt.Errorf("barrier: wait %s: %w", b.path, err))
						return
					}
					if canary.On(bugTrustEvent) {
						k(task.Unit{}, nil)
						return
					}
					round(check)
				})
			})
		}
		round(first)
	}
}

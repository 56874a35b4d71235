package main

import (
	"errors"

	"github.com/zkflow/zkflow/task"
)

// Claim claims job with an ephemeral node holding owner. On NodeExists
// it reads the node: after a lost reply the node may be its own create's.
// It awaits through f, so it is called from a flow's body (as its
// go-zookeeper twin is called with a *zk.Conn); task.Flow makes a Task of
// it. It is 21 lines, as the same steps with go-zookeeper's blocking calls
// are (task/FLOWS.md shows both).
func Claim(f *task.F, job string, owner []byte) (bool, error) {
	for {
		_, err := task.Await(f, task.Create(job, owner, task.Ephemeral))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, task.ErrNodeExists): // someone's, or ours after a lost reply
			d, err := task.Await(f, task.Get(job))
			if err == nil {
				return d.Stat.EphemeralOwner == f.Scope().Session().ID, nil
			}
			if !errors.Is(err, task.ErrNoNode) && !lost(err) {
				return false, err
			} // its owner has gone, or the read was lost: create again
		case lost(err):
			continue // outcome unknown: create again, and read if it exists
		default:
			return false, err
		}
	}
}

// Release deletes job's node if it is still this session's. It reads
// before each delete: a delete whose reply was lost may have been
// applied, and someone may have claimed the job since. After a lost
// reply the read follows a sync: the session may be back through a
// member that has not applied the lost delete, where the node still
// looks ours (and a delete at its version would take the new owner's).
func Release(f *task.F, job string) error {
	for retry := false; ; retry = true {
		if retry {
			if _, err := task.Await(f, task.Sync(job)); err != nil {
				if lost(err) {
					continue
				}
				return err
			}
		}
		d, err := task.Await(f, task.Get(job))
		if errors.Is(err, task.ErrNoNode) || err == nil && d.Stat.EphemeralOwner != f.Scope().Session().ID {
			return nil // gone, or someone else's now
		}
		if err == nil {
			_, err = task.Await(f, task.Delete(job, d.Stat.Version))
			if err == nil || errors.Is(err, task.ErrNoNode) {
				return nil
			}
		}
		if !lost(err) {
			return err
		}
	}
}

// lost reports an error after which a request's outcome is unknown (or
// it was not sent): the request may be made again.
func lost(err error) bool {
	return errors.Is(err, task.ErrConnectionLoss) || errors.Is(err, task.ErrNotSent)
}

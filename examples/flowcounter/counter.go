package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/zkflow/zkflow/task"
)

// ErrOutcomeUnknown says an increment's write was sent and its reply
// lost: the counter may or may not have moved. It wraps the error that
// lost the reply (task.ErrConnectionLoss, or task.ErrSessionExpired).
var ErrOutcomeUnknown = errors.New("increment's outcome unknown")

// Increment adds delta to the counter in the node path (a decimal
// number) and returns the new value: read it, write the sum on condition
// that the version has not moved since the read, and if someone wrote in
// between (BadVersion), read again. No increment is lost, and no two
// increments return the same value. A read whose reply was lost is made
// again, and so is a write that was not sent; a write whose reply was
// lost is not (it may have been applied): Increment returns
// ErrOutcomeUnknown.
func Increment(f *task.F, path string, delta int64) (int64, error) {
	for {
		d, err := task.Await(f, task.Get(path))
		if lost(err) {
			continue
		} else if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(string(d.Data), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("counter %s holds %q, not a number", path, d.Data)
		}
		_, err = task.Await(f, task.Set(path, strconv.AppendInt(nil, n+delta, 10), d.Stat.Version))
		switch {
		case err == nil:
			return n + delta, nil
		case errors.Is(err, task.ErrBadVersion), errors.Is(err, task.ErrNotSent):
			continue // someone wrote in between, or it was not sent: read again
		case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrSessionExpired):
			return 0, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
		default:
			return 0, err
		}
	}
}

func lost(err error) bool {
	return errors.Is(err, task.ErrConnectionLoss) || errors.Is(err, task.ErrNotSent)
}

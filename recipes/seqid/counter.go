package seqid

import (
	"errors"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Counter takes IDs one at a time from the sequence at path, like Next,
// but remembers what its own last compare-and-set left on the node (the
// value and the version). Its next ID is then one write with that version,
// one round trip instead of two, for as long as nobody else writes the
// node; when someone has (BadVersion), the write's outcome is unknown
// (connection loss) or the node is gone, it falls back to Next's protocol,
// reading the node first. The safety argument is Next's: every ID is the
// value of a compare-and-set that succeeded, and the version is never -1.
// One more assumption is the Counter's own: the version it remembers must
// not have gone all the way round since (2^32 writes by others, legacy
// writers going on past -1), or its write would pass on a node far above
// the value it remembers. It trusts what it remembers for at most
// CounterFresh by the executor's clock, then reads first; 2^32 writes
// take hours at any rate a ZooKeeper ensemble reaches.
//
// A Counter belongs to one executor, like an Allocator: its state is
// touched only by the tasks Next returns, on that executor's goroutine.
// Flows that run its Next at the same time are correct, one of them pays
// the fallback.
type Counter struct {
	path   string
	acl    task.ACLProvider
	last   *task.Data // what our last write left, if nothing has failed since
	lastAt time.Time  // when that write's reply came (executor clock)
}

// CounterFresh is how long a Counter writes with the version its last
// write left without reading the node first (see Counter).
const CounterFresh = time.Minute

// NewCounter returns a counter on the sequence at path. WithACL sets the
// ACL the node is created with.
func NewCounter(path string, opts ...Option) (*Counter, error) {
	if err := task.ValidatePath(path, false); err != nil {
		return nil, &Error{Op: "next", Path: path, Err: err}
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Counter{path: path, acl: o.acl}, nil
}

// Next returns a task that takes the next ID.
func (ct *Counter) Next() task.Task[int64] {
	return func(s *task.Scope, k task.Cont[int64]) {
		full := func() {
			task.Run(s, reserveWritten("next", ct.path, 1, ct.acl), func(w written, err error) {
				if err != nil {
					k(0, err)
					return
				}
				ct.last, ct.lastAt = &w.node, s.Now()
				k(w.block.Last, nil)
			})
		}
		if age := s.Now().Sub(ct.lastAt); ct.last == nil || age < 0 || age >= CounterFresh {
			full()
			return
		}
		d := *ct.last
		ct.last = nil
		task.Run(s, casFrom("next", ct.path, d, 1), func(w written, err error) {
			switch {
			case err == nil:
				ct.last, ct.lastAt = &w.node, s.Now()
				k(w.block.Last, nil)
			case isRetryable(err):
				full() // someone else wrote, or the outcome is unknown: read first
			default:
				k(0, err)
			}
		})
	}
}

func isRetryable(err error) bool {
	for _, e := range retryOn {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

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
// reading the node first. It never remembers a write that left the
// version at -1 ("any version" to ZooKeeper, so no compare-and-set could
// use it): the call after such a write reads the node, and fails with
// ErrVersionWrapped only if the version is still -1 (another client may
// have written since and taken it on to 0). The safety argument is Next's:
// every ID is the value of a compare-and-set that succeeded, and the
// version is never -1.
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
//
// A Counter not made by NewCounter (nil, or a zero value) is refused: the
// tasks its Next returns fail with an error matching
// task.ErrInvalidArgument.
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
	if ct == nil || ct.path == "" {
		return task.Fail[int64](errZero("Counter"))
	}
	return func(s *task.Scope, k task.Cont[int64]) {
		full := func() {
			task.Run(s, reserveWritten("next", ct.path, 1, ct.acl), func(w written, err error) {
				if err != nil {
					k(0, err)
					return
				}
				ct.remember(s, w)
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
				ct.remember(s, w)
				k(w.block.Last, nil)
			case isRetryable(err):
				full() // someone else wrote, or the outcome is unknown: read first
			default:
				k(0, err)
			}
		})
	}
}

// remember keeps what the Counter's write w left on the node, for the
// next call's one-write path; unless it left the version at -1, which no
// compare-and-set can expect: the next call then reads the node (another
// client may have taken the version on since) and refuses only if the
// version is still -1.
func (ct *Counter) remember(s *task.Scope, w written) {
	if w.node.Stat.Version == task.AnyVersion {
		ct.last = nil
		return
	}
	ct.last, ct.lastAt = &w.node, s.Now()
}

func isRetryable(err error) bool {
	for _, e := range retryOn {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

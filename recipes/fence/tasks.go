package fence

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// WriteTask is Write as a task, for a TaskStore: the same check, the same
// compare-and-swap, the same errors. It ends with the scope (deadline,
// cancel, session expiry) like any task.
func WriteTask[V any](s TaskStore[V], key string, token int64, value []byte) task.Task[task.Unit] {
	t := UpdateTask(s, key, token, func([]byte) ([]byte, error) { return value, nil })
	return func(sc *task.Scope, k task.Cont[task.Unit]) {
		task.Run(sc, t, func(_ []byte, err error) { k(task.Unit{}, err) })
	}
}

// DeleteTask is Delete as a task.
func DeleteTask[V any](s TaskStore[V], key string, token int64) task.Task[task.Unit] {
	return WriteTask(s, key, token, nil)
}

// UpdateTask is Update as a task. fn runs on the executor goroutine and
// must not block.
func UpdateTask[V any](s TaskStore[V], key string, token int64, fn func(old []byte) ([]byte, error)) task.Task[[]byte] {
	if fn == nil {
		return task.Fail[[]byte](fmt.Errorf("fence: nil update function: %w", task.ErrInvalidArgument))
	}
	return runTask(s, key, token, fn)
}

// ReadTask is Read as a task: it claims the key for token.
func ReadTask[V any](s TaskStore[V], key string, token int64) task.Task[[]byte] {
	return runTask(s, key, token, nil)
}

func runTask[V any](s TaskStore[V], key string, token int64, fn func([]byte) ([]byte, error)) task.Task[[]byte] {
	if err := check(key, token); err != nil {
		return task.Fail[[]byte](err)
	}
	if s == nil {
		return task.Fail[[]byte](fmt.Errorf("fence: nil store: %w", task.ErrInvalidArgument))
	}
	return func(sc *task.Scope, k task.Cont[[]byte]) {
		a := &attempt[V]{key: key, token: token, update: fn}
		var load func()
		load = func() {
			task.Run(sc, s.Load(key), func(l Loaded[V], err error) {
				if err != nil {
					k(nil, &OpError{Op: "load", Key: key, Err: err})
					return
				}
				cas, err := a.loaded(l.Entry, l.Version)
				if err != nil {
					k(nil, err)
					return
				}
				if !cas {
					k(a.value, nil)
					return
				}
				task.Run(sc, s.CompareAndSwap(key, a.version, a.next), func(ok bool, err error) {
					if err != nil {
						k(nil, &OpError{Op: "compare-and-swap", Key: key, Err: err})
						return
					}
					if a.swapped(ok) {
						load()
						return
					}
					k(a.value, nil)
				})
			})
		}
		load()
	}
}

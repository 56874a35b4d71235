package queue

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Option configures a Queue (New, NewClient).
type Option interface{ apply(*Queue) error }

type optionFunc func(*Queue) error

func (f optionFunc) apply(q *Queue) error { return f(q) }

// WithACL makes every node the queue creates (its directories, items,
// in-flight copies and consumer markers) get the ACL p gives for its path.
// Without it, or with p nil, they get task.OpenACL.
func WithACL(p task.ACLProvider) Option {
	return optionFunc(func(q *Queue) error { q.acl = p; return nil })
}

// WithMode sets the delivery guarantee (AtMostOnce by default).
func WithMode(m Mode) Option {
	return optionFunc(func(q *Queue) error {
		if m != AtMostOnce && m != AtLeastOnce {
			return fmt.Errorf("queue: mode %d: %w", int(m), task.ErrInvalidArgument)
		}
		q.mode = m
		return nil
	})
}

// WithBound makes Put refuse, with ErrFull, an item when the queue holds n
// items or more (n >= 1). The bound is best-effort: Put counts the items
// with a listing and then creates, so producers putting at the same time
// can each pass the count: with P producers the queue can hold up to
// n+P-1 items. In-flight items (at-least-once) do not count, and items
// returned from flight (their consumer's session ended) or given back by
// a take that ended are put back without a count: they come on top.
func WithBound(n int) Option {
	return optionFunc(func(q *Queue) error {
		if n < 1 {
			return fmt.Errorf("queue: bound %d (want at least 1): %w", n, task.ErrInvalidArgument)
		}
		q.bound = n
		return nil
	})
}

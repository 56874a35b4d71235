package seqid

import (
	"fmt"
	"slices"

	"github.com/zkflow/zkflow/task"
)

// Allocator hands out IDs from blocks it reserves with Reserve, one
// round trip per block instead of one per ID. A block is reserved when the
// ones in hand run out. IDs of a block that is never used up (the process
// stops, the allocator is dropped) are lost: a gap, never a repeat.
//
// An Allocator belongs to one executor: its state is touched only by the
// tasks Next returns, which must all run on that executor's goroutine, so
// it needs no lock. (To share one across goroutines, use a Client.)
// Flows that run Next at the same time while the allocator is empty each
// reserve a block; the extra blocks are kept and used, not thrown away.
//
// An Allocator not made by NewAllocator (nil, or a zero value) is refused:
// the tasks its Next returns fail with an error matching
// task.ErrInvalidArgument, and its Remaining is 0.
type Allocator struct {
	path   string
	size   int64
	acl    task.ACLProvider
	blocks []Block // reserved and not yet handed out, lowest first
}

// NewAllocator returns an allocator on the sequence at path that reserves
// size IDs at a time. size < 1 fails with ErrBadCount. WithACL sets the
// ACL the node is created with.
func NewAllocator(path string, size int64, opts ...Option) (*Allocator, error) {
	if size < 1 {
		return nil, &Error{Op: "reserve", Path: path, Err: fmt.Errorf("%w: %d", ErrBadCount, size)}
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Allocator{path: path, size: size, acl: o.acl}, nil
}

// Next returns a task that succeeds with the allocator's next ID, taken
// from a block in hand or from a new block reserved for it.
func (a *Allocator) Next() task.Task[int64] {
	if a == nil || a.size < 1 {
		return task.Fail[int64](errZero("Allocator"))
	}
	return func(s *task.Scope, k task.Cont[int64]) {
		if id, ok := a.take(); ok {
			k(id, nil)
			return
		}
		task.Run(s, reserve("reserve", a.path, a.size, a.acl), func(b Block, err error) {
			if err != nil {
				k(0, err)
				return
			}
			i, _ := slices.BinarySearchFunc(a.blocks, b, func(x, y Block) int { return cmpInt(x.First, y.First) })
			a.blocks = slices.Insert(a.blocks, i, b)
			id, _ := a.take()
			k(id, nil)
		})
	}
}

// Remaining returns how many reserved IDs the allocator holds. Executor
// goroutine only. A nil Allocator holds none.
func (a *Allocator) Remaining() int64 {
	if a == nil {
		return 0
	}
	var n int64
	for _, b := range a.blocks {
		n += b.Len()
	}
	return n
}

func (a *Allocator) take() (int64, bool) {
	if len(a.blocks) == 0 {
		return 0, false
	}
	b := &a.blocks[0]
	id := b.First
	if b.First == b.Last {
		a.blocks = a.blocks[1:]
	} else {
		b.First++
	}
	return id, true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

package seqid

import (
	"errors"
	"fmt"
	"math"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Errors of the recipe, tested with errors.Is. They reach the caller
// wrapped in an *Error that names the operation and the node.
var (
	// ErrShortData: the node holds fewer than 8 bytes, so it is not a
	// sequence node (or not one this format can read).
	ErrShortData = errors.New("node data shorter than 8 bytes")
	// ErrVersionWrapped: the node's data version has wrapped around to -1,
	// which ZooKeeper reads as "any version": a write expecting it would
	// be unconditional, so the recipe refuses to write.
	ErrVersionWrapped = errors.New("data version wrapped to -1: compare-and-set impossible")
	// ErrOverflow: adding the count to the node's value would pass the
	// largest int64.
	ErrOverflow = errors.New("sequence would overflow int64")
	// ErrBadCount: a block size below 1. It also matches
	// task.ErrInvalidArgument.
	ErrBadCount = fmt.Errorf("%w: block size must be at least 1", task.ErrInvalidArgument)
)

// Error is a failure of the recipe on one node.
type Error struct {
	Op   string // "next", "reserve"
	Path string
	Err  error
}

func (e *Error) Error() string { return "seqid " + e.Op + " " + e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Block is the range of IDs First..Last, both included, reserved by one
// compare-and-set.
type Block struct {
	First, Last int64
}

// Len is the number of IDs in the block.
func (b Block) Len() int64 { return b.Last - b.First + 1 }

// errNodeGone: the node was deleted between the read and the write. It
// never leaves the package: the round starts again (and recreates it).
var errNodeGone = errors.New("node deleted during the round")

// Known bugs the simulation must catch, switched on only by tests
// (internal/canary).
const (
	// bugBlindWrite writes with version -1 (any) instead of the version
	// read: the compare-and-set becomes a blind write.
	bugBlindWrite canary.Name = "seqid/blind-write"
	// bugLossNotApplied treats connection loss on the compare-and-set as
	// "not applied": it writes the same value again, unconditionally,
	// and hands the IDs out.
	bugLossNotApplied canary.Name = "seqid/loss-not-applied"
)

// retryOn are the errors after which a round starts again from the read.
// NoNode is not among them: a create whose parent is missing fails with it
// and must not spin; only the write's NoNode is turned into errNodeGone.
var retryOn = []error{task.ErrBadVersion, task.ErrConnectionLoss, task.ErrNotSent, errNodeGone}

// Next returns a task that takes the next ID from the sequence at path: it
// adds one to the node's value with a compare-and-set and succeeds with the
// new value. The first ID of a sequence whose node is missing is 1. See the
// package documentation for the protocol and what each error does.
// WithACL sets the ACL the node is created with.
func Next(path string, opts ...Option) task.Task[int64] {
	return c.Map(reserve("next", path, 1, newOptions(opts).acl), func(b Block) int64 { return b.Last })
}

// Reserve returns a task that reserves n IDs at once (the node's value
// goes up by n in one compare-and-set) and succeeds with them. n < 1 fails
// with ErrBadCount. WithACL sets the ACL the node is created with.
func Reserve(path string, n int64, opts ...Option) task.Task[Block] {
	return reserve("reserve", path, n, newOptions(opts).acl)
}

func reserve(op, path string, n int64, acl task.ACLProvider) task.Task[Block] {
	return c.Map(reserveWritten(op, path, n, acl), func(w written) Block { return w.block })
}

// written is the outcome of a compare-and-set that reserved a block: the
// block, and the node's data and Stat as the write left them.
type written struct {
	block Block
	node  task.Data
}

func reserveWritten(op, path string, n int64, acl task.ACLProvider) task.Task[written] {
	if n < 1 {
		return task.Fail[written](&Error{Op: op, Path: path, Err: fmt.Errorf("%w: %d", ErrBadCount, n)})
	}
	round := c.Then(read(path, acl), func(d task.Data) task.Task[written] {
		return casFrom(op, path, d, n)
	})
	return c.Retry(round, c.Policy{On: retryOn})
}

// casFrom writes the node's value plus n with the version of d, a read of
// the node (or what our last write left), and succeeds with the block.
// BadVersion, connection loss and the rest are the caller's to retry.
func casFrom(op, path string, d task.Data, n int64) task.Task[written] {
	data, b, err := advance(d, n)
	if err != nil {
		return task.Fail[written](&Error{Op: op, Path: path, Err: err})
	}
	version := d.Stat.Version
	if canary.On(bugBlindWrite) {
		version = task.AnyVersion
	}
	done := func(st task.Stat) written { return written{b, task.Data{Data: data, Stat: st}} }
	set := c.Map(task.Set(path, data, version), done)
	if canary.On(bugLossNotApplied) {
		// Takes the lost write for one never applied and writes the
		// same value again unconditionally, handing out the block.
		set = c.OnError(set, func(error) task.Task[written] {
			return c.Map(task.Set(path, data, task.AnyVersion), done)
		}, task.ErrConnectionLoss)
	}
	return c.OnError(set, func(err error) task.Task[written] {
		return task.Fail[written](fmt.Errorf("%w: %w", errNodeGone, err))
	}, task.ErrNoNode)
}

// advance computes, from a read of the node, the data to write and the
// block it reserves.
func advance(d task.Data, n int64) ([]byte, Block, error) {
	v, err := Decode(d.Data)
	if err != nil {
		return nil, Block{}, err
	}
	if d.Stat.Version == task.AnyVersion {
		return nil, Block{}, ErrVersionWrapped
	}
	if v > math.MaxInt64-n {
		return nil, Block{}, fmt.Errorf("%w: %d + %d", ErrOverflow, v, n)
	}
	data := append(Encode(v+n), d.Data[Size:]...)
	return data, Block{First: v + 1, Last: v + n}, nil
}

// read gets the node, creating it with the value 0 and acl's ACL if it is
// missing.
func read(path string, acl task.ACLProvider) task.Task[task.Data] {
	create := c.OnError(c.Map(zkops.Create(path, Encode(0), task.Persistent, acl), func(string) task.Unit { return task.Unit{} }),
		func(error) task.Task[task.Unit] { return task.Done }, task.ErrNodeExists)
	again := c.Then(create, func(task.Unit) task.Task[task.Data] { return task.Get(path) })
	return c.OnError(task.Get(path), func(error) task.Task[task.Data] { return again }, task.ErrNoNode)
}

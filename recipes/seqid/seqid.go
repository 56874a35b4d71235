package seqid

import (
	"errors"
	"fmt"
	"math"
	"time"

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

// errZero is the error of a nil or zero value's methods (what: its type).
func errZero(what string) error {
	return fmt.Errorf("seqid: nil or zero %s (not made by its constructor): %w", what, task.ErrInvalidArgument)
}

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
// NoNode is not among them: a create whose parent is missing creates the
// ancestors once and tries again, and fails with it if the parent is
// still missing (deleted meanwhile) rather than spin; only the write's
// NoNode is turned into errNodeGone.
var retryOn = []error{task.ErrBadVersion, task.ErrConnectionLoss, task.ErrNotSent, errNodeGone}

// Next returns a task that takes the next ID from the sequence at path: it
// adds one to the node's value with a compare-and-set and succeeds with the
// new value. The first ID of a sequence whose node is missing is 1. See the
// package documentation for the protocol and what each error does.
// WithACL sets the ACL the node is created with.
func Next(path string, opts ...Option) task.Task[int64] {
	o, err := newOptions(opts)
	if err != nil {
		return task.Fail[int64](err)
	}
	acl := o.acl
	return func(s *task.Scope, k task.Cont[int64]) {
		r := &reservation{s: s, kID: k, op: "next", path: path, n: 1, acl: acl}
		r.onResp = r.response
		r.round()
	}
}

// Reserve returns a task that reserves n IDs at once (the node's value
// goes up by n in one compare-and-set) and succeeds with them. n < 1 fails
// with ErrBadCount. WithACL sets the ACL the node is created with.
func Reserve(path string, n int64, opts ...Option) task.Task[Block] {
	o, err := newOptions(opts)
	if err != nil {
		return task.Fail[Block](err)
	}
	return reserve("reserve", path, n, o.acl)
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
	return func(s *task.Scope, k task.Cont[written]) {
		r := &reservation{s: s, k: k, op: op, path: path, n: n, acl: acl}
		r.onResp = r.response
		r.round()
	}
}

// reservation is one Reserve: the rounds of the package doc (read, then
// compare-and-set; again after BadVersion, NoNode, connection loss or not
// sent) kept in one value, so that a round costs its requests and little
// else. Executor goroutine only.
type reservation struct {
	s         *task.Scope
	k         task.Cont[written] // the outcome; or, for Next,
	kID       task.Cont[int64]   // its ID
	op, path  string
	n         int64
	acl       task.ACLProvider
	onResp    task.Cont[task.Response] // r.response, made once
	step      step                     // the request awaited
	d         task.Data                // the read the round writes from
	data      []byte                   // what it writes
	b         Block
	sent      time.Time // when the round's write was sent
	conflicts int       // BadVersions in a row
	created   bool      // the round has created the node
	parents   bool      // the round has created the node's ancestors
}

// step is the request a reservation awaits.
type step int

const (
	reading step = iota
	creating
	setting
)

// response takes the awaited request's outcome.
func (r *reservation) response(resp task.Response, err error) {
	switch r.step {
	case reading:
		r.read(resp, err)
	case creating:
		r.createdNode(resp, err)
	default:
		r.set(resp, err)
	}
}

func (r *reservation) exec(st step, req task.Request) {
	r.step = st
	task.Exec(r.s, req, r.onResp)
}

// done ends the reservation.
func (r *reservation) done(w written, err error) {
	if r.kID != nil {
		r.kID(w.block.Last, err)
		return
	}
	r.k(w, err)
}

// round starts a round: step 1, the read.
func (r *reservation) round() {
	r.exec(reading, &task.GetDataRequest{Path: r.path})
}

func (r *reservation) read(resp task.Response, err error) {
	switch {
	case err == nil:
		r.d = task.Data{Data: resp.Data, Stat: resp.Stat}
		r.cas()
	case errors.Is(err, task.ErrNoNode) && !r.created:
		// A missing node is created holding 0 (NodeExists: another client
		// created it), then read again.
		r.created = true
		r.exec(creating, &task.CreateRequest{Path: r.path, Data: Encode(0), Mode: task.Persistent, ACL: r.acl.For(r.path)})
	default:
		r.failed(err)
	}
}

func (r *reservation) createdNode(_ task.Response, err error) {
	if errors.Is(err, task.ErrNoNode) && !r.parents {
		// The parent is missing: create it and its ancestors
		// (persistent), then the node.
		r.parents = true
		task.Run(r.s, zkops.EnsurePath(task.Parent(r.path), r.acl), func(_ task.Unit, err error) {
			if err != nil {
				r.failed(err)
				return
			}
			r.exec(creating, &task.CreateRequest{Path: r.path, Data: Encode(0), Mode: task.Persistent, ACL: r.acl.For(r.path)})
		})
		return
	}
	if err != nil && !errors.Is(err, task.ErrNodeExists) {
		r.failed(err)
		return
	}
	r.exec(reading, &task.GetDataRequest{Path: r.path})
}

// cas is steps 2 and 3: the write of the value plus n with the version
// read.
func (r *reservation) cas() {
	data, b, err := advance(r.d, r.n)
	if err != nil {
		r.done(written{}, &Error{Op: r.op, Path: r.path, Err: err})
		return
	}
	r.data, r.b = data, b
	version := r.d.Stat.Version
	if canary.On(bugBlindWrite) {
		version = task.AnyVersion
	}
	r.sent = r.s.Now()
	r.exec(setting, &task.SetDataRequest{Path: r.path, Data: data, Version: version})
}

func (r *reservation) set(resp task.Response, err error) {
	if err != nil && errors.Is(err, task.ErrConnectionLoss) && canary.On(bugLossNotApplied) {
		// Takes the lost write for one never applied and writes the
		// same value again unconditionally, handing out the block.
		r.exec(setting, &task.SetDataRequest{Path: r.path, Data: r.data, Version: task.AnyVersion})
		return
	}
	if err == nil {
		r.done(written{r.b, task.Data{Data: r.data, Stat: resp.Stat}}, nil)
		return
	}
	if errors.Is(err, task.ErrNoNode) {
		err = fmt.Errorf("%w: %w", errNodeGone, err)
	}
	r.failed(err)
}

// failed starts the round again after the errors of retryOn, and ends the
// reservation with any other. After BadVersion (another client won the
// round) it first waits a random time, up to a bound that starts at the
// length of the lost round and doubles with each BadVersion in a row
// (at most 32 times the round, and at most maxBackoff): contenders that
// all retry at once would mostly lose again, each loss costing a read and
// a write.
func (r *reservation) failed(err error) {
	if !retryable(err) {
		r.done(written{}, err)
		return
	}
	r.created, r.parents = false, false
	if !errors.Is(err, task.ErrBadVersion) {
		r.conflicts = 0
		r.round()
		return
	}
	r.conflicts++
	wait := backoff(r.s.Now().Sub(r.sent), r.conflicts, r.s.Rand())
	if wait <= 0 {
		r.round()
		return
	}
	task.Suspend(r.s, func(_ task.Unit, err error) {
		if err != nil {
			r.done(written{}, err)
			return
		}
		r.round()
	}, func(resume task.Cont[task.Unit]) func() {
		tm := r.s.Runtime().AfterFunc(r.s.Now().Add(wait), func() {
			r.s.Schedule(func() { resume(task.Unit{}, nil) })
		})
		return func() { tm.Stop() }
	})
}

// maxBackoff bounds the wait after a BadVersion: a write's latency grows
// with the load on the server, and waits that doubled a loaded latency
// without a bound would leave the server idle (the rate of IDs collapsed
// to a few per second with 64 clients on a loaded machine).
const maxBackoff = 50 * time.Millisecond

// backoff is the wait before the round after the conflicts-th BadVersion
// in a row, the lost write having taken rtt: uniform in
// [0, rtt * 2^(conflicts-1)), the bound at most 32 rtt and maxBackoff; u is
// a random draw. rtt is capped at maxBackoff before it is doubled: a
// latency measured on a clock that jumped (over 2^58 ns) would otherwise
// overflow the shift and give a negative bound.
func backoff(rtt time.Duration, conflicts int, u uint64) time.Duration {
	if rtt <= 0 || conflicts < 1 {
		return 0
	}
	rtt = min(rtt, maxBackoff)
	bound := min(rtt<<min(conflicts-1, 5), maxBackoff)
	return time.Duration(u % uint64(bound))
}

func retryable(err error) bool {
	for _, e := range retryOn {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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

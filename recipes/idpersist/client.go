package idpersist

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// errAgain: the round waited for a node or a raised limit; it starts over.
// It never leaves the package.
var errAgain = errors.New("idpersist: round again")

var genRetryOn = []error{task.ErrBadVersion, task.ErrConnectionLoss, task.ErrNotSent, task.ErrNoNode, errAgain}

// Reserve returns a task that takes at least 1 and at most n IDs from the
// sequence of cfg (cfg.Sequence and cfg.Limit are used), never passing the
// reserved limit: when the sequence has reached it, the task waits (on a
// watch of the limit node) until the leader raises it. It also waits while
// either node is missing (the leader creates them; after a data loss it
// seeds the sequence from the durable mark first). n < 1 fails with
// seqid.ErrBadCount.
func Reserve(cfg Config, n int64) task.Task[seqid.Block] {
	cfg, err := cfg.withDefaults(false)
	if err != nil {
		return task.Fail[seqid.Block](err)
	}
	if n < 1 {
		return task.Fail[seqid.Block](fmt.Errorf("%w: %d", seqid.ErrBadCount, n))
	}
	round := c.Then(readValue(cfg.Limit), func(lim task.Data) task.Task[seqid.Block] {
		limit, err := seqid.Decode(lim.Data)
		if err != nil {
			return task.Fail[seqid.Block](err)
		}
		return c.Then(readValue(cfg.Sequence), func(d task.Data) task.Task[seqid.Block] {
			v, err := seqid.Decode(d.Data)
			if err != nil {
				return task.Fail[seqid.Block](err)
			}
			if d.Stat.Version == task.AnyVersion {
				return task.Fail[seqid.Block](seqid.ErrVersionWrapped)
			}
			bound := !canary.On(bugUnboundLimit)
			if b, ok := limitBound(lim.Data); bound && (ok && b != d.Stat.Czxid || d.Stat.Version == 0) {
				// The limit was written for another incarnation of the
				// sequence (deleted and created again since): its IDs may
				// have been handed out already. Or the node has never
				// been written (version 0), which a new incarnation
				// shares with it: a write of ours read from one could
				// land on the other. Wait for the leader to raise the
				// node and write a limit bound to it.
				return waitRewritten[seqid.Block](cfg.Limit, lim.Stat.Mzxid)
			}
			if v >= limit && !canary.On(bugPassLimit) {
				return waitRaised(cfg.Limit, v)
			}
			take := min(n, limit-v)
			if canary.On(bugPassLimit) {
				take = n
			}
			if v > math.MaxInt64-take {
				return task.Fail[seqid.Block](seqid.ErrOverflow)
			}
			data := append(seqid.Encode(v+take), d.Data[seqid.Size:]...)
			block := seqid.Block{First: v + 1, Last: v + take}
			if !bound {
				return c.Map(task.Set(cfg.Sequence, data, d.Stat.Version), func(task.Stat) seqid.Block { return block })
			}
			// The write is tied to the limit read: a sequence node deleted
			// and created again since our read, and written up to the
			// version we read, was raised and bound by the leader, which
			// then wrote the limit (its version moved), so the check fails
			// (BadVersion: the round starts over).
			return c.Map(task.Multi(&task.CheckRequest{Path: cfg.Limit, Version: lim.Stat.Version},
				&task.SetDataRequest{Path: cfg.Sequence, Data: data, Version: d.Stat.Version}),
				func([]task.MultiResult) seqid.Block { return block })
		})
	})
	return c.Retry(round, c.Policy{On: genRetryOn})
}

// Next is Reserve(cfg, 1) that succeeds with the one ID.
func Next(cfg Config) task.Task[int64] {
	return c.Map(Reserve(cfg, 1), func(b seqid.Block) int64 { return b.Last })
}

// readValue gets path; a missing node is waited for (exists watch), then
// the round starts over.
func readValue(path string) task.Task[task.Data] {
	return c.OnError(task.Get(path), func(error) task.Task[task.Data] {
		return c.Then(task.ExistsW(path), func(sw task.StatWatch) task.Task[task.Data] {
			if sw.Stat != nil {
				return task.Fail[task.Data](errAgain)
			}
			return awaitAgain[task.Data](sw.Watch)
		})
	}, task.ErrNoNode)
}

// awaitAgain waits for w, then fails with errAgain so the round starts
// over. A watch another user of the session takes away (RemoveWatches:
// a cache of the node stopping) is one more wake-up: the round reads
// again, which watches the node again.
func awaitAgain[T any](w *task.Watch) task.Task[T] {
	again := func(error) task.Task[task.Event] { return task.Fail[task.Event](errAgain) }
	return c.Then(c.OnError(w.Wait(), again, task.ErrWatchRemoved), func(task.Event) task.Task[T] { return task.Fail[T](errAgain) })
}

// The limit node holds the limit (8 bytes, as seqid) and, after it, the
// czxid of the sequence node it was written for (8 bytes, big-endian):
// the incarnation of the sequence it bounds. A sequence deleted and
// created again (by an operator, or removed and added again under Parent)
// is a new node with another czxid, and generators take nothing from it
// until the leader has raised it above every ID of its earlier lives and
// written a limit for it.

// encodeLimit is the limit node's data: limit, then the czxid of the
// sequence node it bounds.
func encodeLimit(limit, czxid int64) []byte {
	return binary.BigEndian.AppendUint64(seqid.Encode(limit), uint64(czxid))
}

// limitBound returns the czxid of the sequence node a limit node's data
// was written for; false for a limit of 8 bytes only, which bounds any.
func limitBound(data []byte) (int64, bool) {
	if len(data) < 2*seqid.Size {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(data[seqid.Size:])), true
}

// waitRewritten waits until the limit node changes (its mzxid is no
// longer mzxid, or it is gone), then fails with errAgain so the round
// starts over.
func waitRewritten[T any](limitPath string, mzxid int64) task.Task[T] {
	return c.Then(task.ExistsW(limitPath), func(sw task.StatWatch) task.Task[T] {
		if sw.Stat == nil || sw.Stat.Mzxid != mzxid {
			return task.Fail[T](errAgain)
		}
		return awaitAgain[T](sw.Watch)
	})
}

// waitRaised waits until the limit node changes from a value at most v,
// then fails with errAgain so the round starts over.
func waitRaised(limitPath string, v int64) task.Task[seqid.Block] {
	return c.Then(task.GetW(limitPath), func(dw task.DataWatch) task.Task[seqid.Block] {
		if l, err := seqid.Decode(dw.Data.Data); err == nil && l > v {
			return task.Fail[seqid.Block](errAgain)
		}
		return awaitAgain[seqid.Block](dw.Watch)
	})
}

// Client is the blocking API over Next, run on an executor someone
// runs. Safe for concurrent use.
type Client struct {
	ex   *executor.Executor
	next task.Task[int64]
}

// NewClient returns a generator of cfg's sequence run by ex.
func NewClient(ex *executor.Executor, cfg Config) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("%w: nil executor", task.ErrInvalidArgument)
	}
	if _, err := cfg.withDefaults(false); err != nil {
		return nil, err
	}
	return &Client{ex: ex, next: Next(cfg)}, nil
}

// Next returns a new ID, waiting while the limit is reached or the nodes
// are missing, until ctx ends. A session expiry during a call starts it
// again on the next session.
func (g *Client) Next(ctx context.Context) (int64, error) {
	if g == nil || g.ex == nil || g.next == nil {
		return 0, fmt.Errorf("%w: nil or zero Client (not made by NewClient)", task.ErrInvalidArgument)
	}
	return blocking.AwaitAcrossExpiry(ctx, "idpersist: next", g.ex, g.next)
}

package seqid

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking API: it runs the recipe's tasks on an executor
// that someone runs (executor.Run) and waits for them. Its methods are safe
// for concurrent use from any goroutine.
//
// With blocks (blockSize > 1), an ID from the block in hand is taken under
// a mutex on the caller's goroutine, without a trip through the executor;
// only when the block runs out does one caller reserve the next block (one
// compare-and-set on the executor) while the others wait for it. One
// reservation at a time keeps the IDs of calls that do not overlap in time
// increasing.
type Client struct {
	ex   *executor.Executor
	path string
	size int64
	acl  task.ACLProvider
	next task.Task[int64] // blockSize 1: a Counter's

	mu      sync.Mutex
	block   Block         // IDs in hand, when have
	have    bool          //
	filling chan struct{} // closed when the reservation under way ends
}

// NewClient returns a generator on the sequence at path, run by ex.
// With blockSize 1 each ID costs one compare-and-set (a Counter: one round
// trip while no other client writes the node); with more, IDs come
// from blocks of blockSize reserved one at a time (a gap of at most
// blockSize-1 per generator that stops). blockSize < 1 fails with
// ErrBadCount. WithACL sets the ACL the node is created with.
func NewClient(ex *executor.Executor, path string, blockSize int64, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("%w: nil executor", task.ErrInvalidArgument)
	}
	if blockSize < 1 {
		return nil, &Error{Op: "reserve", Path: path, Err: fmt.Errorf("%w: %d", ErrBadCount, blockSize)}
	}
	if err := task.ValidatePath(path, false); err != nil {
		return nil, &Error{Op: "reserve", Path: path, Err: err}
	}
	ct, err := NewCounter(path, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, path: path, size: blockSize, acl: ct.acl, next: ct.Next()}, nil
}

// Next returns a new ID, or an error once ctx ends (task.ErrCanceled or
// task.ErrDeadlineExceeded, matching ctx's error under errors.Is), the
// executor closes, or the recipe fails (ErrVersionWrapped, ...). When the
// session expires during a call, Next tries again on the next session:
// nothing was handed out. IDs returned to calls that do not overlap in
// time increase. With a ctx that has ended it fails at once (an ID of the
// block in hand stays for a later call), and on an executor's goroutine
// with executor.ErrOnExecutor.
func (g *Client) Next(ctx context.Context) (int64, error) {
	if g.size == 1 {
		return blocking.AwaitAcrossExpiry(ctx, "seqid "+g.path+": next", g.ex, g.next)
	}
	// On the executor's goroutine, waiting for a reservation (this call's
	// or another's) would stop the very goroutine it needs.
	if err := executor.CanBlock(); err != nil {
		return 0, err
	}
	for {
		if ctx.Err() != nil {
			return 0, blocking.CtxErr(ctx, "seqid "+g.path+": next")
		}
		g.mu.Lock()
		if g.have {
			id := g.block.First
			if g.block.First == g.block.Last {
				g.have = false
			} else {
				g.block.First++
			}
			g.mu.Unlock()
			return id, nil
		}
		if ch := g.filling; ch != nil {
			g.mu.Unlock()
			park.Wait(ctx, func() bool { return park.Closed(ch) || ctx.Err() != nil })
			if park.Closed(ch) { // a fill already done wins over a ctx that has ended too
				continue
			}
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return 0, blocking.CtxErr(ctx, "seqid "+g.path+": next")
			}
		}
		ch := make(chan struct{})
		g.filling = ch
		g.mu.Unlock()

		b, err := blocking.AwaitAcrossExpiry(ctx, "seqid "+g.path+": reserve", g.ex, reserve("reserve", g.path, g.size, g.acl))
		g.mu.Lock()
		g.filling = nil
		if err == nil {
			g.block, g.have = b, true
		}
		g.mu.Unlock()
		close(ch)
		if err != nil {
			return 0, err
		}
	}
}

// ctxErr is the error executor.Await gives for an ended ctx.

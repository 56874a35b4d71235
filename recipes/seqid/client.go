package seqid

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking API: it runs the recipe's tasks on an executor
// that someone runs (executor.Run) and waits for them. Its methods are safe
// for concurrent use from any goroutine. A Client not made by NewClient
// (nil, or a zero value) is refused: Next fails with an error matching
// task.ErrInvalidArgument.
//
// With blocks (blockSize > 1), an ID from the block in hand is taken under
// a mutex on the caller's goroutine, without a trip through the executor;
// only when the block runs out does one caller reserve the next block (one
// compare-and-set on the executor) while the others wait for it. One
// reservation at a time keeps the IDs of calls that do not overlap in time
// increasing. A reservation is not tied to the context of the caller that
// started it: when that caller's ctx ends, the caller returns at once and
// the reservation runs on in the background, the others still waiting for
// it; its block is kept for later calls. (Canceled with its caller, a
// compare-and-set already sent could be applied and its block thrown away,
// a gap the package doc does not allow.)
type Client struct {
	ex   *executor.Executor
	path string
	size int64
	acl  task.ACLProvider
	next task.Task[int64] // blockSize 1: a Counter's

	mu      sync.Mutex
	block   Block // IDs in hand, when have
	have    bool  //
	filling *fill // the reservation under way, if any
}

// fill is one reservation of a block by a Client. Its fields are guarded
// by the Client's mu (done is closed under it).
type fill struct {
	done chan struct{} // closed when the reservation has ended
	err  error         // its failure, once done is closed
	left bool          // the caller that started it no longer waits
}

// NewClient returns a generator on the sequence at path, run by ex.
// With blockSize 1 each ID costs one compare-and-set (a Counter: one round
// trip while no other client writes the node); with more, IDs come
// from blocks of blockSize reserved one at a time (a gap of at most
// blockSize-1 per generator that stops). With blockSize 1, a call whose
// ctx ends while its write is in flight gives up its ID, a gap of one if
// the write was applied. blockSize < 1 fails with ErrBadCount. WithACL
// sets the ACL the node is created with.
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
// executor closes (with blocks, once the block in hand, reserved already
// and this Client's, is used up), or the recipe fails (ErrVersionWrapped,
// ...). When the
// session expires during a call, Next tries again on the next session:
// nothing was handed out. IDs returned to calls that do not overlap in
// time increase. With a ctx that has ended it fails at once (an ID of the
// block in hand stays for a later call), with a nil ctx with
// executor.ErrNilContext, and on an executor's goroutine with
// executor.ErrOnExecutor. With blocks, a call whose ctx ends while
// it reserves the next block returns at once and leaves the reservation
// running: its block is handed out to later calls (a failure nobody
// waits for goes to the executor's Config.OnError).
func (g *Client) Next(ctx context.Context) (int64, error) {
	if g == nil || g.ex == nil || g.size < 1 {
		return 0, errZero("Client")
	}
	if g.size == 1 {
		return blocking.AwaitAcrossExpiry(ctx, "seqid "+g.path+": next", g.ex, g.next)
	}
	// On the executor's goroutine, waiting for a reservation (this call's
	// or another's) would stop the very goroutine it needs.
	if err := executor.CanBlock(); err != nil {
		return 0, err
	}
	for {
		if ctx == nil || ctx.Err() != nil { // a nil ctx: executor.ErrNilContext
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
		f, mine := g.filling, false
		if f == nil { // this call reserves the next block
			f, mine = &fill{done: make(chan struct{})}, true
			g.filling = f
		}
		g.mu.Unlock()
		if mine {
			g.reserve(f)
		}
		park.Wait(ctx, func() bool { return park.Closed(f.done) || ctx.Err() != nil })
		if !park.Closed(f.done) { // a fill already done wins over a ctx that has ended too
			select {
			case <-f.done:
			case <-ctx.Done():
			}
		}
		g.mu.Lock()
		if !park.Closed(f.done) { // ctx ended first
			f.left = f.left || mine
			g.mu.Unlock()
			return 0, blocking.CtxErr(ctx, "seqid "+g.path+": next")
		}
		err := f.err
		g.mu.Unlock()
		if mine && err != nil {
			return 0, err
		}
		// A block came (or another call's reservation failed: this one
		// tries its own).
	}
}

// reserve submits the reservation f of the next block, on ex whatever the
// context of the call that started it, and again on the next session
// each time the session expires under it. Its end, on the executor's
// goroutine, keeps the block for the calls that take IDs, or the failure
// for the call that started f; if that call has left, the failure goes
// to the executor's Config.OnError (task.ErrClosed excepted: nothing is
// left to reserve for).
func (g *Client) reserve(f *fill) {
	var epoch uint64 // the session of the last run (executor goroutine only)
	r := reserve("reserve", g.path, g.size, g.acl)
	t := task.Task[Block](func(s *task.Scope, k task.Cont[Block]) {
		epoch = s.Session().Epoch
		r(s, k)
	})
	var submit func()
	submit = func() {
		executor.Submit(g.ex, t, func(b Block, err error) {
			if errors.Is(err, task.ErrSessionExpired) {
				// As executor.AwaitAcrossExpiry: again only if the
				// executor has moved to the next session (else it would
				// fail the same way at once).
				if cur, _ := g.ex.Current(); cur.Epoch != epoch {
					submit()
					return
				}
			}
			g.mu.Lock()
			g.filling = nil
			if err == nil {
				g.block, g.have = b, true
			}
			f.err = err
			left := f.left
			// Closed under mu, with left read: a caller whose ctx ends
			// finds done either closed (and takes err) or open with
			// left not yet read (and err is reported). Closed after
			// the unlock, a caller could leave in between: its ctx's
			// end returned, err reported to nobody.
			close(f.done)
			g.mu.Unlock()
			if err != nil && left && !errors.Is(err, task.ErrClosed) {
				g.ex.Report(err)
			}
		})
	}
	submit()
}

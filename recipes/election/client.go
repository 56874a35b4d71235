package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkflow/zkflow/combinators"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Client is the blocking face of an Election or a Master: the same verbs,
// each taking a context first and waiting for its outcome. Its methods
// are safe from any goroutine and need someone running the executor
// (executor.Run). A nil or zero Client (not made by NewClient or
// NewMasterClient) fails them with task.ErrInvalidArgument.
type Client struct {
	ex   *executor.Executor
	cand Candidate
	name string // "election /dir", for errors
}

// NewClient returns a Client of the election under dir (New) whose flows
// run on ex.
func NewClient(ex *executor.Executor, dir string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("election: nil executor: %w", task.ErrInvalidArgument)
	}
	e, err := New(dir, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, cand: e, name: "election " + dir}, nil
}

// NewMasterClient returns a Client of the master node at path
// (NewMaster) whose flows run on ex.
func NewMasterClient(ex *executor.Executor, path string, opts ...Option) (*Client, error) {
	if ex == nil {
		return nil, fmt.Errorf("election: nil executor: %w", task.ErrInvalidArgument)
	}
	m, err := NewMaster(path, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ex: ex, cand: m, name: "master " + path}, nil
}

// Candidate is the task face this Client runs: an *Election or a
// *Master.
func (c *Client) Candidate() Candidate {
	if c == nil {
		return nil
	}
	return c.cand
}

// Executor is the executor the Client runs its flows on.
func (c *Client) Executor() *executor.Executor {
	if c == nil {
		return nil
	}
	return c.ex
}

// zero reports a Client not made by NewClient or NewMasterClient (nil,
// or a zero value): its methods fail with errZeroClient (Resign and
// Fenced, which need no Candidate, refuse a nil Client, and a zero one
// as not the owner of any Leadership).
func (c *Client) zero() bool { return c == nil || c.ex == nil || c.cand == nil }

// errZeroClient is the error of a nil or zero Client's methods.
var errZeroClient = fmt.Errorf("election: nil or zero Client (not made by NewClient or NewMasterClient): %w", task.ErrInvalidArgument)

// Campaign runs the candidate's campaign (Election.Campaign,
// Master.Campaign) and waits until it leads or ctx ends. When ctx
// ends first, the campaign is canceled, its node is deleted by a cleanup
// that outlives ctx, and Campaign returns task.ErrCanceled or
// task.ErrDeadlineExceeded (matching context.Canceled and
// context.DeadlineExceeded under errors.Is); leadership won just as ctx
// ended is resigned.
func (c *Client) Campaign(ctx context.Context) (*Leadership, error) {
	if c.zero() {
		return nil, errZeroClient
	}
	return blocking.Take(ctx, c.name+": campaign", c.ex, c.cand.Campaign(), func(l *Leadership) { l.ex = c.ex },
		func(l *Leadership) { executor.Submit(c.ex, l.Resign(), nil) }) // won just as ctx ended: nobody will use it
}

// Leader reads the current leader's data (Election.Leader,
// Master.Leader).
func (c *Client) Leader(ctx context.Context) ([]byte, error) {
	if c.zero() {
		return nil, errZeroClient
	}
	return blocking.Await(ctx, c.name+": leader", c.ex, c.cand.Leader())
}

// Resign gives up leadership this Client won (Leadership.Resign). The
// resign is always started, whatever ctx: if ctx has ended, or ends
// before the delete is done, Resign returns its error
// (task.ErrCanceled or task.ErrDeadlineExceeded) and the resign goes on
// in the background (l's Done closes, the node is deleted). A Leadership
// not won through a Client on this executor (one on another executor, or
// Campaign run by hand) is refused with task.ErrInvalidArgument: run its
// own Resign on the executor that won it.
func (c *Client) Resign(ctx context.Context, l *Leadership) error {
	if c == nil {
		return errZeroClient
	}
	if err := blocking.Owned(c.ex, exOf(l), errNotOurs); err != nil {
		return err
	}
	_, err := blocking.Give(ctx, c.name+": resign", c.ex, nil, l.Resign())
	return err
}

// Fenced runs ops in one multi that succeeds only while l still leads
// (Leadership.Fenced), and waits for it until ctx ends.
func (c *Client) Fenced(ctx context.Context, l *Leadership, ops ...task.MultiOp) ([]task.MultiResult, error) {
	if c == nil {
		return nil, errZeroClient
	}
	return blocking.Do(ctx, c.name+": fenced write", c.ex, exOf(l), errNotOurs, func() task.Task[[]task.MultiResult] { return l.Fenced(ops...) })
}

var errNotOurs = fmt.Errorf("election: leadership not won through a Client on this executor: %w", task.ErrInvalidArgument)

func exOf(l *Leadership) *executor.Executor {
	if l == nil {
		return nil
	}
	return l.ex
}

// LeadOptions tune Lead.
type LeadOptions struct {
	// Requeue campaigns again after each leadership, however it ended (lead
	// returned nil, or the leadership was lost), as Apache Curator's
	// LeaderSelector does with autoRequeue. Without it Lead returns after
	// the first leadership.
	Requeue bool
	// Backoff is the wait before a campaign that follows a failed one; the
	// zero value means DefaultLeadBackoff, and another with Initial not
	// above 0 (it would not wait: the campaigns would spin), a negative
	// Max or a Jitter outside [0, 1] makes Lead fail with
	// task.ErrInvalidArgument before it campaigns. It is measured on the
	// executor's clock, and its jitter is drawn from the executor's
	// seeded source, so a simulation replays the same waits.
	Backoff combinators.Backoff
}

// DefaultLeadBackoff is the wait between failed campaigns of Lead:
// 50ms, doubling up to 5s, each scaled by a factor in [0.8, 1.2].
var DefaultLeadBackoff = combinators.Backoff{Initial: 50 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.2}

// Lead campaigns and, once leading, calls lead with a context
// that is canceled as soon as the leadership ends (lost to an expiry, an
// operator's delete, the disconnect rule; Leadership.Err says which).
// When lead returns, or ctx ends, the leadership is given up (Resign,
// started whatever ctx: the node is deleted, so the next candidate need
// not wait for an expiry); a lead that panics gives it up too, in the
// background, as the panic goes on up to Lead's caller. With opts.Requeue the candidate then
// campaigns again, until ctx ends. lead must return soon after its
// context is canceled: until it does, a new leader may be acting while
// it still is (its writes should go through Leadership.Fenced, which the
// server refuses once another leader may act).
//
// Lead returns ctx's error (task.ErrCanceled or task.ErrDeadlineExceeded)
// when ctx ends, lead's error when lead returns one (the leadership is
// given up first; lead returning its own context's error once that has
// ended is not lead failing: Lead goes on as after nil, or returns ctx's
// error if ctx has ended), the resign's error when the node could not be deleted
// (with ctx still live; the session is not ending; joined to lead's
// error, errors.Join, when lead returned one), and nil after one
// leadership without Requeue. A
// campaign that fails with an error a later campaign may not meet (the
// session expired, the connection was lost, the candidate node was
// deleted or the directory changed under it: task.ErrSessionExpired,
// task.ErrConnectionLoss, task.ErrNotSent, ErrLost, task.ErrNoNode,
// task.ErrNodeExists, task.ErrBadVersion, task.ErrNotEmpty, and the
// server's timeout, throttling and reconfiguration codes) is run again
// after a wait (opts.Backoff, growing with each failure in a row); any
// other error (task.ErrNoAuth, an invalid path, task.ErrClosed, ...)
// would fail again: Lead returns it. A nil lead fails with
// task.ErrInvalidArgument, a nil ctx with executor.ErrNilContext.
func (cl *Client) Lead(ctx context.Context, opts LeadOptions, lead func(context.Context, *Leadership) error) error {
	if cl.zero() {
		return errZeroClient
	}
	if lead == nil {
		return fmt.Errorf("election: nil lead function: %w", task.ErrInvalidArgument)
	}
	if ctx == nil {
		return blocking.CtxErr(ctx, cl.name+": lead")
	}
	backoff := opts.Backoff
	if backoff == (combinators.Backoff{}) {
		backoff = DefaultLeadBackoff
	}
	if err := (combinators.Policy{Backoff: backoff}).Validate(); err != nil || backoff.Initial <= 0 {
		// Initial 0 (a Backoff given Max alone, say) waits nothing: the
		// campaigns of a transient failure would spin.
		return fmt.Errorf("election: lead backoff %+v (want Initial > 0): %w", backoff, task.ErrInvalidArgument)
	}
	failures := 0
	for {
		l, err := cl.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return blocking.CtxErr(ctx, cl.name+": lead")
			}
			if !transient(err) {
				return err
			}
			failures++
			if _, err := executor.Await(ctx, cl.ex, wait(backoff, failures)); err != nil {
				// The wait ends with ctx, or with the session (an
				// expiry during the backoff: campaign again on the next).
				if ctx.Err() != nil {
					return blocking.CtxErr(ctx, cl.name+": lead")
				}
				if !transient(err) {
					return err
				}
			}
			continue
		}
		failures = 0
		lctx, cancel := context.WithCancel(ctx)
		park.Go(lctx, func(lctx context.Context) { // a goroutine (under a simulation, one of its actors)
			park.Wait(lctx, func() bool { return park.Closed(l.Done()) || lctx.Err() != nil })
			select {
			case <-l.Done():
				cancel()
			case <-lctx.Done():
			}
		})
		lerr := cl.callLead(lctx, cancel, l, lead)
		if lerr != nil && lctx.Err() != nil && errors.Is(lerr, lctx.Err()) && !canary.On(bugLeadContextErrorFails) {
			// lead stopped because its context ended (`return
			// ctx.Err()`), with the leadership or with ctx: not a
			// failure of lead's; ctx's end is told as ctx's below.
			lerr = nil
		}
		cancel()
		// Started whatever ctx: if ctx has ended, Resign returns at once
		// and the delete goes on in the background.
		rerr := cl.Resign(ctx, l)
		// The node could not be deleted (task.ErrNoAuth, say): a campaign
		// again on this session would wait behind it. Resign has handed
		// the failure to us, not to Config.OnError: it must be told.
		failed := rerr != nil && ctx.Err() == nil && !errors.Is(rerr, task.ErrClosed) && !errors.Is(rerr, task.ErrSessionExpired)
		switch {
		case lerr != nil && failed:
			return errors.Join(lerr, fmt.Errorf("%s: lead: resign: %w", cl.name, rerr))
		case lerr != nil:
			return lerr
		case failed:
			return fmt.Errorf("%s: lead: resign: %w", cl.name, rerr)
		case ctx.Err() != nil:
			return blocking.CtxErr(ctx, cl.name+": lead")
		case !opts.Requeue:
			return nil
		}
	}
}

// callLead calls lead. If lead does not return (it panics, or calls
// runtime.Goexit), the leadership is given up on the way out, in the
// background, as when ctx ends: a caller that recovers would otherwise
// keep a candidate node that nobody leads with until the session ends,
// and every other candidate would wait behind it.
func (cl *Client) callLead(lctx context.Context, cancel context.CancelFunc, l *Leadership, lead func(context.Context, *Leadership) error) error {
	returned := false
	defer func() {
		if !returned {
			cancel()
			blocking.Background(cl.ex, nil, l.Resign()) // its failure goes to Config.OnError
		}
	}()
	err := lead(lctx, l)
	returned = true
	return err
}

// transientErrs are the campaign errors after which Lead campaigns again:
// see Lead.
var transientErrs = []error{
	task.ErrSessionExpired, task.ErrConnectionLoss, task.ErrNotSent, ErrLost,
	task.ErrNoNode, task.ErrNodeExists, task.ErrBadVersion, task.ErrNotEmpty,
	task.CodeOperationTimeout, task.CodeRequestTimeout, task.CodeThrottledOp,
	task.CodeSessionMoved, task.CodeReconfigInProgress, task.CodeNewConfigNoQuorum,
}

func transient(err error) bool {
	for _, t := range transientErrs {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// wait is the wait before the campaign after the n-th failure in a row,
// on the executor's clock, with jitter from its seeded source.
func wait(b combinators.Backoff, n int) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		u := float64(s.Rand()>>11) / (1 << 53)
		combinators.Sleep(b.Delay(n, u))(s, k)
	}
}

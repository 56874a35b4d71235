package zkops

import (
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Holding is what a holder of one node follows until it ends (a read or
// write lock, a semaphore's lease): the node's session and, from the
// first Done, Err or IsHeld, the node itself. It ends once, by End (a
// release) or by loss: the session expires or closes, a reconnect lands
// on another session, or the node is deleted or changed by someone else
// (WatchNode). A loss's error wraps Lost, the node's path and the cause.
// Done, Err and IsHeld are safe from any goroutine; the rest runs on the
// executor goroutine.
type Holding struct {
	path    string
	version int32
	czxid   int64 // the node's incarnation
	sess    task.Session
	lost    error             // the recipe's sentinel, wrapped by every loss
	stale   func() bool       // a canary: nil, or true to ignore the session's end
	pending *blocking.Pending // counts the delete after a loss (Count)

	mu        sync.Mutex
	uncertain bool
	err       error
	done      chan struct{}

	// post runs a function on the executor goroutine, from any
	// goroutine; nil when the runtime is not an *executor.Executor.
	post  func(func())
	watch sync.Once // the node watch is set at the first Done, Err or IsHeld

	// executor goroutine only
	rt    task.Runtime
	mon   *task.Scope
	unsub func()
}

// Init readies h for the node at path, as st describes it when it was
// taken (its version and incarnation), held by session sess; a loss wraps
// lost. stale, if not nil, is a canary's switch: while it returns true
// the session's expiry is ignored (a holder that goes on after its
// session ended, which the simulations must catch).
func (h *Holding) Init(path string, st task.Stat, sess task.Session, lost error, stale func() bool) {
	h.path, h.version, h.czxid, h.sess, h.lost, h.stale = path, st.Version, st.Czxid, sess, lost, stale
	h.done = make(chan struct{})
}

// Count has the delete that follows a loss (Lose) counted in p, a
// blocking Client's Pending, from before Done closes until the delete
// ends, whatever its outcome: the Client's next attempt, made once it
// sees the loss, waits for it instead of queueing behind its own lost
// node. Call it before Start; a nil p counts nothing.
func (h *Holding) Count(p *blocking.Pending) { h.pending = p }

// CountKept returns del, the delete of h's node at its release, such
// that a delete an ACL refused, which goes on in the background
// (KeepDeleting) as del fails with the refusal, is counted in the
// Pending of Count from before del's outcome until it ends (CountKept):
// the node is gone, or the session ended. The Client's next attempt, made
// once its Release has returned task.ErrNoAuth and the ACL is back,
// waits for it rather than queue behind its own released node (a try
// would fail with ErrBusy behind it). The delete counted is the one going
// on already, not a second one. Run it in the flow of the release's
// delete (inside Detached, so that a copy of it counts too).
func (h *Holding) CountKept(del task.Task[task.Unit]) task.Task[task.Unit] {
	if h.pending == nil {
		return del
	}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, del, func(v task.Unit, err error) {
			if err != nil {
				CountKept(s, h.path, h.czxid, h.pending)
			}
			k(v, err)
		})
	}
}

// Path is the node's path.
func (h *Holding) Path() string { return h.path }

// Version is the version the node was held at.
func (h *Holding) Version() int32 { return h.version }

// Session is the session the node belongs to.
func (h *Holding) Session() task.Session { return h.sess }

func (h *Holding) staleOn() bool { return h.stale != nil && h.stale() }

// Start follows the session of s's runtime until the holding ends.
// Executor goroutine.
func (h *Holding) Start(s *task.Scope) {
	h.rt = s.Runtime()
	h.unsub = s.Subscribe(h.onSession)
	h.mon = s.Runtime().SessionScope().Child()
	// The session scope ends with the session (expiry) or the executor
	// (Close, Shutdown), after the subscribers have heard of it: the
	// holding ends with it, watched or not. End cancels mon with
	// ErrCanceled.
	h.mon.OnDone(func(err error) {
		if errors.Is(err, task.ErrCanceled) || (h.staleOn() && errors.Is(err, task.ErrSessionExpired)) {
			return
		}
		h.Lose(err)
	})
	if ex, ok := s.Runtime().(*executor.Executor); ok {
		h.post = func(fn func()) {
			executor.Submit(ex, task.Func(func(*task.Scope) (task.Unit, error) { fn(); return task.Unit{}, nil }), nil)
		}
		return
	}
	h.watch.Do(func() { s.Schedule(h.watchNode) })
}

// Done is closed when the holding ends. The first call to Done, Err or
// IsHeld sets the watch on the node that notices someone else deleting or
// changing it.
func (h *Holding) Done() <-chan struct{} {
	h.watchNodeOnce()
	return h.done
}

// Err is nil while the holding has not ended; then End's error, or an
// error wrapping the lost sentinel and the cause.
func (h *Holding) Err() error {
	h.watchNodeOnce()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// IsHeld reports whether the holding has not ended and the session is
// connected: false while it is suspended (the session may expire on the
// server without the client hearing of it), true again on reconnect to
// the same session.
func (h *Holding) IsHeld() bool {
	h.watchNodeOnce()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err == nil && !h.uncertain
}

// watchNodeOnce has the node watched, once. Any goroutine.
func (h *Holding) watchNodeOnce() {
	h.watch.Do(func() {
		if h.post != nil {
			h.post(h.watchNode)
		}
	})
}

// watchNode watches the node until the holding ends. Executor goroutine.
func (h *Holding) watchNode() {
	mon := h.mon
	if mon == nil {
		return // the holding has ended
	}
	task.RunIn(mon, WatchNode(h.path, h.version, nil), func(_ task.Unit, err error) {
		if h.staleOn() && errors.Is(err, task.ErrSessionExpired) {
			return
		}
		if !errors.Is(err, task.ErrCanceled) {
			h.Lose(err)
		}
	})
}

func (h *Holding) setUncertain(u bool) {
	h.mu.Lock()
	h.uncertain = u
	h.mu.Unlock()
}

func (h *Holding) onSession(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	switch ev.State {
	case task.StateSuspended:
		h.setUncertain(true)
	case task.StateConnected:
		if ev.SessionID != h.sess.ID && !h.staleOn() {
			h.Lose(task.ErrSessionExpired)
			return
		}
		h.setUncertain(false)
	case task.StateExpired:
		if !h.staleOn() {
			h.Lose(task.ErrSessionExpired)
		}
	case task.StateClosed:
		h.Lose(task.ErrClosed)
	}
}

// End ends the holding with err unless it already ended, and stops
// following it. Executor goroutine.
func (h *Holding) End(err error) {
	h.mu.Lock()
	if h.err == nil {
		h.err = err
		close(h.done)
	}
	h.mu.Unlock()
	if h.unsub != nil {
		h.unsub()
		h.unsub = nil
	}
	if h.mon != nil {
		// Cancel ends the node watch, if any; Close detaches mon from the
		// session scope, which outlives the holding.
		mon := h.mon
		h.mon = nil
		mon.Cancel(task.ErrCanceled)
		mon.Close()
	}
}

// Lose ends the holding as lost, for cause. Executor goroutine.
func (h *Holding) Lose(cause error) {
	if cause == nil {
		cause = errors.New("unknown cause")
	}
	h.mu.Lock()
	ended := h.err != nil
	h.mu.Unlock()
	del := !ended && h.rt != nil && h.czxid != 0 && !errors.Is(cause, task.ErrSessionExpired) && !errors.Is(cause, task.ErrClosed)
	done := func() {}
	if del {
		done = h.pending.Add() // before Done closes: see Count
	}
	h.End(fmt.Errorf("%w: %s: %w", h.lost, h.path, cause))
	if !del {
		return
	}
	// Lost while the session lives: the node was deleted, or written by
	// someone else. A node still there (ours, this incarnation) would
	// keep every other contender waiting behind it until the session
	// ends: it is deleted, as a flow of its own. A node gone, or made
	// again by someone else, is left alone.
	rt := h.rt
	task.Go(rt.SessionScope(), DeleteNode(h.path, task.Stat{Czxid: h.czxid, EphemeralOwner: h.sess.ID}), func(_ task.Unit, err error) {
		done()
		if err != nil && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrClosed) {
			rt.Report(fmt.Errorf("%w: delete %s after the loss: %w", h.lost, h.path, err))
		}
	})
}

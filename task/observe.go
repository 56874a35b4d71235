package task

import "time"

// Observer receives the facts of a running runtime as they happen: flows
// started and ended, every ZooKeeper operation with its latency and
// outcome, session transitions, retries, queue depths, and what only the
// connection knows (connection attempts, failed handshakes, the server a
// session reached, requests that spilled). executor.Config.Observer,
// zkadapter.Config.Observer and fakezk.ConnConfig.Observer take one; the
// executor makes the flow, operation, session, retry and queue callbacks,
// the connections make OnConn. A nil *Observer, or a nil field, means no
// callback: the runtime then checks one pointer and allocates nothing.
//
// Every callback runs synchronously on the goroutine that learnt the fact,
// named on each field below. Callbacks must not block and must not call
// back into the executor or the connection (they may run with the
// connection's lock held); the executor's callbacks are made one at a time
// on its goroutine, but OnOpEnd and OnConn run on the connection's
// goroutines, concurrently with the executor's: an Observer that keeps
// state shared between them guards it.
//
// What is guaranteed, and tested (executor/observe_test.go):
//
//   - every request the executor sends is seen exactly once by OnOpStart,
//     before the connection has it, and exactly once by OnOpEnd with its
//     outcome; the OnOpEnd calls come in the order the connection
//     completes the requests (the session's order, task.Conn);
//   - a flow's OnFlowStart comes before its OnFlowEnd, once each, and
//     before the OnOpStart of any of its operations;
//   - OnSession sees every transition the executor applies, in order, each
//     From equal to the previous To;
//   - OnRetry is called once per attempt after the first (combinators.Retry).
type Observer struct {
	// OnFlowStart: a flow submitted to the executor starts (or ends before
	// it could: canceled or past its deadline while queued). Executor
	// goroutine. What it returns is kept as the flow's Tag and handed to
	// OnFlowEnd and to the operation and retry callbacks of the flow (a
	// span, say).
	OnFlowStart func(FlowInfo) any
	// OnFlowEnd: the flow's outcome is delivered. Executor goroutine.
	OnFlowEnd func(FlowDone)
	// OnOpStart: the executor hands a request to the connection. Executor
	// goroutine, before Conn.Do. What it returns is OpDone.Tag.
	OnOpStart func(OpInfo) any
	// OnOpEnd: the request's outcome is known. The goroutine the
	// connection completes it on (zkadapter: go-zookeeper's receive or
	// connection goroutine, or the executor's for a request refused at
	// once; fakezk: the goroutine that delivers), or the executor's when
	// the executor fails the request itself (closed).
	OnOpEnd func(OpDone)
	// OnSession: the executor applied a session event. Executor goroutine,
	// before Config.OnSession and the subscribers hear it.
	OnSession func(SessionChange)
	// OnRetry: combinators.Retry is about to run another attempt (after
	// the backoff, if any, is decided and before it is waited). Executor
	// goroutine.
	OnRetry func(RetryInfo)
	// OnQueues: the executor moved what other goroutines handed it into its
	// queues (once per Step that found work in the inbox), or a Step found
	// no job to run and the depths differ from those it last reported
	// (Moved 0: a drained queue's depth is not kept). Executor goroutine.
	OnQueues func(QueueDepths)
	// OnConn: a fact of the connection. The connection's goroutine that
	// learnt it (zkadapter: go-zookeeper's connection goroutine, or the
	// caller of Do for a spill; fakezk: the goroutine holding the
	// server's lock), possibly with the connection's lock held.
	OnConn func(ConnEvent)
	// OnRecipe: a recipe reports what its requests mean (a lock acquired
	// or released, a leadership won or ended: RecipeEvent). Executor
	// goroutine.
	OnRecipe func(RecipeEvent)
}

// Filled returns a copy of o whose nil fields do nothing, or nil when o is
// nil: what a runtime keeps, so that each call site checks one pointer.
func (o *Observer) Filled() *Observer {
	if o == nil {
		return nil
	}
	c := *o
	if c.OnFlowStart == nil {
		c.OnFlowStart = func(FlowInfo) any { return nil }
	}
	if c.OnFlowEnd == nil {
		c.OnFlowEnd = func(FlowDone) {}
	}
	if c.OnOpStart == nil {
		c.OnOpStart = func(OpInfo) any { return nil }
	}
	if c.OnOpEnd == nil {
		c.OnOpEnd = func(OpDone) {}
	}
	if c.OnSession == nil {
		c.OnSession = func(SessionChange) {}
	}
	if c.OnRetry == nil {
		c.OnRetry = func(RetryInfo) {}
	}
	if c.OnQueues == nil {
		c.OnQueues = func(QueueDepths) {}
	}
	if c.OnConn == nil {
		c.OnConn = func(ConnEvent) {}
	}
	if c.OnRecipe == nil {
		c.OnRecipe = func(RecipeEvent) {}
	}
	return &c
}

// FlowInfo identifies a flow submitted to an executor.
type FlowInfo struct {
	// ID numbers the executor's flows from 1 in the order they start.
	ID uint64
	// Session is the session the flow is bound to (its ID is 0 before the
	// first session is established).
	Session Session
	// Start is when it started, on the executor's clock.
	Start time.Time
	// Tag is what OnFlowStart returned (nil when OnFlowStart is called).
	Tag any
}

// FlowDone is a flow's end.
type FlowDone struct {
	FlowInfo
	End time.Time
	Err error // the flow's outcome: nil on success
}

// OpInfo is one request on its way to the connection.
type OpInfo struct {
	// Seq numbers the executor's requests from 1 in the order they are sent.
	Seq uint64
	// Req is the request (Req.OpName(), Req.NodePath()); it must not be
	// modified or kept past the callback if the caller may reuse it.
	Req Request
	// Session is the executor's session id when it was sent.
	Session int64
	// Flow is the flow that sent it: nil for a flow not submitted to the
	// executor (started with Go: forks, deferred cleanups).
	Flow *FlowInfo
	// Start is when it was sent, on the executor's clock.
	Start time.Time
}

// OpDone is a request's outcome.
type OpDone struct {
	OpInfo
	// Tag is what OnOpStart returned.
	Tag any
	// End is when the outcome was known, on the executor's clock.
	End time.Time
	// Err is the response's error: nil, a Code, ErrConnectionLoss,
	// ErrNotSent, ErrSessionExpired, ErrClosed, or a client-side error
	// (ErrInvalidPath, ...). CodeOf gives the server code.
	Err error
}

// Latency is End - Start.
func (d OpDone) Latency() time.Duration { return d.End.Sub(d.Start) }

// SessionChange is a session transition the executor applied.
type SessionChange struct {
	From, To State
	// Session is the executor's session after the event (after an
	// Expired, the next one, not yet established: ID 0).
	Session Session
	// SessionID is the id the event is about: the new session's for
	// Connected, the old one's for Expired and Closed.
	SessionID int64
	// At is when the executor applied it, and Since when it entered From
	// (the time spent suspended is At - Since when From is StateSuspended).
	At, Since time.Time
}

// RetryInfo is one more attempt of a retried task.
type RetryInfo struct {
	// Attempt is the attempt about to run: 2 for the first retry.
	Attempt int
	// Err is what the previous attempt failed with.
	Err error
	// Wait is the backoff before it.
	Wait time.Duration
	// Flow is the flow retrying (nil as in OpInfo.Flow).
	Flow *FlowInfo
}

// QueueDepths are the executor's queue lengths right after it moved its
// inbox into them.
type QueueDepths struct {
	// Moved is how many items the inbox held.
	Moved int
	// Events and Tasks are the event and task queues' lengths. Tasks grows
	// while the session is suspended (the task queue is paused).
	Events, Tasks int
	// Paused reports whether the task queue is paused.
	Paused bool
}

// ConnEventKind says what a ConnEvent reports.
type ConnEventKind uint8

const (
	// ConnAttempt: a connection to Server is being opened (Err set: the
	// attempt failed before the handshake, such as a refused TCP connect).
	ConnAttempt ConnEventKind = iota + 1
	// ConnHandshakeFailed: the connection to Server ended before the
	// server accepted the session (refused, silent, not ZooKeeper); Err
	// says why.
	ConnHandshakeFailed
	// ConnEstablished: the session (Session) is usable on a connection to
	// Server; Reconnect is set when the session was usable before on
	// another connection (a resume, possibly on another server).
	ConnEstablished
	// ConnSpill: a request could not be handed to the client library at
	// once and joined the connection's spill queue, now Depth long.
	ConnSpill
)

// String names the kind.
func (k ConnEventKind) String() string {
	switch k {
	case ConnAttempt:
		return "attempt"
	case ConnHandshakeFailed:
		return "handshake_failed"
	case ConnEstablished:
		return "established"
	case ConnSpill:
		return "spill"
	}
	return "unknown"
}

// ConnEvent is a fact only the connection knows.
type ConnEvent struct {
	Kind      ConnEventKind
	Server    string // the server's address ("" where it has none, fakezk)
	Session   int64
	Reconnect bool
	Depth     int
	Err       error
}

// ObserverOf returns the Observer of the runtime running s (nil if none):
// for combinators that report to it, such as Retry.
func ObserverOf(s *Scope) *Observer {
	if o, ok := s.env.rt.(interface{ Observer() *Observer }); ok {
		return o.Observer()
	}
	return nil
}

// RecipeEvent is a fact a recipe reports through the Observer: for
// recipes/lock, Kind "lock" and Event "acquired" (Wait: from the acquire's
// start) then "released" or "lost" (Held: from the acquisition, Err the
// cause); for recipes/election, Kind "leadership" and Event "elected"
// (Wait: from the campaign's start) then "resigned" or "lost" (Held, Err).
type RecipeEvent struct {
	Kind    string
	Event   string
	Path    string // the lock's or the leader's node
	Session int64
	At      time.Time     // on the executor's clock
	Wait    time.Duration // acquired, elected
	Held    time.Duration // released, lost, ended
	Err     error         // lost, ended: why (released: nil)
}

// ReportRecipe hands ev to the Observer of the executor s runs on, if one
// is set; it returns that Observer (nil if none), for the report that
// ends what ev began. Executor goroutine.
func ReportRecipe(s *Scope, ev RecipeEvent) *Observer {
	o := ObserverOf(s)
	if o != nil {
		o.OnRecipe(ev)
	}
	return o
}

// FlowOf returns the flow s belongs to, as the executor's Observer knows
// it: nil when no Observer is set or s belongs to no submitted flow.
func FlowOf(s *Scope) *FlowInfo { return s.flow }

// SetFlow marks s, and the scopes made under it from now on, as belonging
// to flow f. It is for the executor, which marks each flow's scope when an
// Observer is set.
func (s *Scope) SetFlow(f *FlowInfo) { s.flow = f }

// ReceiverFlow returns the flow of the operation behind r, when r is the
// Receiver an operation task of this package handed Runtime.Send (nil
// otherwise, or when the flow is not marked): how a Runtime attributes a
// request to its flow.
func ReceiverFlow(r Receiver) *FlowInfo {
	switch w := r.(type) {
	case *sendWait:
		return w.s.flow
	case *watchSend:
		return w.s.flow
	}
	return nil
}

package task

import (
	"time"
)

// Runtime is what a Scope needs from the executor that runs it. The executor
// package implements it (embedding a Frames gives the one unexported
// method); users do not, and call it only through Scope.
// Every method is called on the executor goroutine.
type Runtime interface {
	// Clock is the executor's time source.
	Clock() Clock
	// Schedule queues fn on the task queue: it runs later, on the executor
	// goroutine, while the session is connected.
	Schedule(fn func())
	// AfterFunc runs fn on the executor goroutine once the clock reaches at,
	// from the event queue (so also while the session is suspended).
	AfterFunc(at time.Time, fn func()) Timer
	// Send passes req to the connection. r.Receive, and w.Notify if a
	// watch was set (w is nil when req asks for none), run on the executor
	// goroutine from the task queue.
	Send(req Request, r Receiver, w Watcher)
	// Current returns the current session and its state.
	Current() (Session, State)
	// SessionScope returns the scope of the current session: every flow is
	// a child of one, so that expiry and Close end the flows bound to it.
	SessionScope() *Scope
	// Subscribe calls fn, on the executor goroutine, with every session
	// event from now until the returned cancel is called. When a session
	// ends (Expired, Closed), every subscriber hears it after the
	// session's scopes have ended and before any of their continuations
	// or OnDone callbacks runs.
	Subscribe(fn func(Event)) (cancel func())
	// Rand returns a pseudo-random number from the executor's seeded source.
	Rand() uint64
	// Report receives the errors of flows nobody waits for (detached
	// cleanups, forks without a handler).
	Report(err error)
	// frames is the state the task package keeps on the runtime: an
	// implementation has it by embedding a Frames.
	frames() *Frames
}

// Scope is what a running step may use: the connection's operations (through
// the operation tasks of this package), the clock, the session the flow is
// bound to, cancellation and deadlines, registered cleanup, and starting
// flows of its own. A flow's steps share its Scope; combinators such as
// Deadline and All give the steps they run a child scope.
//
// A Scope is used only on the executor goroutine.
type Scope struct {
	env    *scopeEnv // the runtime and the session: shared by every scope of one session
	depth  *int
	parent *Scope
	flow   *FlowInfo // the observed flow it belongs to (SetFlow), inherited

	err    error // why the scope is done, once it is
	closed bool
	// closedLive: closed while live (Close set err), not ended by a
	// cancellation: its OnDone callbacks never run. In closed's padding,
	// it makes Scope no larger.
	closedLive bool
	// runIn: a RunIn runs in the scope; runDone: it has delivered its
	// outcome (RunIn's finish ran). Kept here, in the same padding, rather
	// than in a variable of RunIn's that its closure would move to the heap.
	runIn, runDone bool
	// hasDefer1: Defer registered defer1; defer1Off: it was withdrawn.
	hasDefer1, defer1Off bool
	// dl is the scope's deadline (nil: none): its own (WithDeadline), or
	// the one of the ancestor it inherits it from, shared.
	dl      *scopeDeadline
	onDone1 doner      // the first OnDone callback (most scopes have one at most)
	more    *scopeMore // the others, with what else few scopes use

	children scopeList
	sibling  scopeLink
	// pending links the scopes a cancellation has ended and not yet
	// delivered (abandoned their waits, run their OnDone callbacks).
	pending *Scope
	waits   waitList
	// defer1 is the first cleanup Defer registered (most scopes have one
	// at most), kept here so that Defer makes no record for it; the others
	// are in more.defers.
	defer1 Task[Unit]
}

// scopeEnv is what every scope of one session shares, one value per
// session scope: each scope holds one pointer for both.
type scopeEnv struct {
	rt      Runtime
	session *Session // the executor keeps it up to date
}

// scopeDeadline is a deadline: its time, and the timer of the scope that
// set it (owner), which the descendants that inherit it leave alone.
type scopeDeadline struct {
	at    time.Time
	owner *Scope
	timer Timer
}

// deadlineScope is a scope made by WithDeadline with a deadline of its
// own: the scope and its deadline in one allocation.
type deadlineScope struct {
	Scope
	dl scopeDeadline
}

// scopeMore is the part of a scope that few scopes use, made on first
// use: the OnDone callbacks after the first, the cleanups after the
// first, and CloseAndWait's count.
type scopeMore struct {
	onDone  []doner
	defers  []deferred // in the order registered
	cleaned *cleanups  // CloseAndWait's count of cleanups running: &cw, once set
	cw      cleanups
}

// extra returns s.more, made if s has none.
func (s *Scope) extra() *scopeMore {
	if s.more == nil {
		s.more = new(scopeMore)
	}
	return s.more
}

// cleaned returns CloseAndWait's count of cleanups running, if it was
// called.
func (s *Scope) cleaned() *cleanups {
	if s.more == nil {
		return nil
	}
	return s.more.cleaned
}

// doner is what a scope calls when it is canceled: an OnDone callback,
// or RunIn's delivery of the error. Both are functions of a named type
// with this method, which an interface holds without allocating.
type doner interface{ scopeDone(err error) }

// doneFunc is an OnDone callback as a doner.
type doneFunc func(err error)

func (f doneFunc) scopeDone(err error) { f(err) }

// cleanups counts the deferred cleanups a CloseAndWait started that have
// not ended; done runs when the last one ends.
type cleanups struct {
	n    int
	done []func()
}

// NewSessionScope returns the scope under which every flow bound to
// session sess runs: canceling it (with ErrSessionExpired or ErrClosed)
// ends them all. It is for the executor; flows start with Go or through
// a combinator.
// The executor keeps *sess up to date (the id is filled in when the session
// is established); scopes read it, never write it.
func NewSessionScope(rt Runtime, sess *Session) *Scope {
	return &Scope{env: &scopeEnv{rt: rt, session: sess}, depth: &rt.frames().depth}
}

// Clock returns the executor's clock.
func (s *Scope) Clock() Clock { return s.env.rt.Clock() }

// Now is Clock().Now().
func (s *Scope) Now() time.Time { return s.env.rt.Clock().Now() }

// Session is the session this flow is bound to: when it expires, the flow
// fails with ErrSessionExpired.
func (s *Scope) Session() Session { return *s.env.session }

// Current returns the executor's current session and its state.
func (s *Scope) Current() (Session, State) { return s.env.rt.Current() }

// IsCurrent reports whether sess is the executor's current session and it
// is connected (not suspended, expired or closed). A handle (a lock, a
// leadership) is trustworthy only while this holds.
func (s *Scope) IsCurrent(sess Session) bool {
	cur, st := s.env.rt.Current()
	return st == StateConnected && cur.Epoch == sess.Epoch
}

// Err returns nil while the scope is live, and afterwards why it ended:
// ErrDeadlineExceeded, ErrCanceled, ErrSessionExpired, ErrClosed, or an
// error passed to Cancel.
func (s *Scope) Err() error { return s.err }

// Deadline returns the scope's absolute deadline, if it has one.
func (s *Scope) Deadline() (time.Time, bool) {
	if s.dl == nil {
		return time.Time{}, false
	}
	return s.dl.at, true
}

// Runtime returns the executor running the scope.
func (s *Scope) Runtime() Runtime { return s.env.rt }

// Schedule queues fn on the executor's task queue.
func (s *Scope) Schedule(fn func()) { s.env.rt.Schedule(fn) }

// Rand returns a pseudo-random number from the executor's seeded source.
func (s *Scope) Rand() uint64 { return s.env.rt.Rand() }

// Child returns a new scope under s: it ends when s does (with s's error),
// and can be canceled, or given an earlier deadline, on its own. The caller
// must Close it.
func (s *Scope) Child() *Scope {
	c := new(Scope)
	s.initChild(c)
	return c
}

// initChild makes c, a zero Scope, a child of s, as Child returns it.
func (s *Scope) initChild(c *Scope) {
	c.env, c.depth, c.parent, c.flow, c.dl = s.env, s.depth, s, s.flow, s.dl
	if s.err != nil {
		c.err = s.err
		return
	}
	s.children.push(c)
}

// WithDeadline returns a child scope that ends with ErrDeadlineExceeded at
// the absolute time at, or earlier if s's own deadline is earlier (deadlines
// only shrink through nesting). The timer fires from the event queue, so a
// deadline ends a flow even while the session is suspended.
func (s *Scope) WithDeadline(at time.Time) *Scope {
	if s.err != nil || at.IsZero() || (s.dl != nil && !at.Before(s.dl.at)) {
		return s.Child()
	}
	b := new(deadlineScope)
	c := &b.Scope
	s.initChild(c)
	b.dl.at, b.dl.owner = at, c
	c.dl = &b.dl
	if !s.env.rt.Clock().Now().Before(at) {
		c.Cancel(ErrDeadlineExceeded)
		return c
	}
	b.dl.timer = s.env.rt.AfterFunc(at, func() { c.Cancel(ErrDeadlineExceeded) })
	return c
}

// OnDone registers fn to run, on the executor goroutine, when the scope is
// canceled (not when it is closed normally). fn runs at once if it already
// was; on a scope closed normally it never runs. A nil fn registers
// nothing.
func (s *Scope) OnDone(fn func(err error)) {
	if fn == nil {
		return
	}
	if s.err != nil {
		if !s.closedLive {
			fn(s.err)
		}
		return
	}
	if s.onDone1 == nil {
		s.onDone1 = doneFunc(fn)
		return
	}
	m := s.extra()
	m.onDone = append(m.onDone, doneFunc(fn))
}

// onDone is OnDone for a doner.
func (s *Scope) onDone(d doner) {
	if s.err != nil {
		if !s.closedLive {
			d.scopeDone(s.err)
		}
		return
	}
	if s.onDone1 == nil {
		s.onDone1 = d
		return
	}
	m := s.extra()
	m.onDone = append(m.onDone, d)
}

// Cancel ends the scope with err (ErrCanceled if nil) unless it has already
// ended: every wait in it and in its children is abandoned, so the chains
// waiting there receive err at once; their late results are dropped.
//
// Cancel reaches every descendant of s, whatever runs while it does. It
// works in two phases. First it ends s and every live scope under it: each
// has Err() == err, nothing more starts in it, a late resume of one of its
// waits is dropped; no code but Cancel's runs in this phase, so nothing
// can change the tree under it. Then it delivers: for each scope ended,
// children before parents, it abandons the waits (their continuations get
// err) and runs the OnDone callbacks, in the order registered. What those
// do (close, cancel or create any scope, this one included) cannot hide a
// scope from cancellation: every scope under s has ended before the first
// of them runs, and an ended scope takes no new child (Child returns it
// already ended). The work is linear in the scopes ended and the waits and
// callbacks they hold, and allocates nothing.
func (s *Scope) Cancel(err error) {
	s.CancelDeferred(err).Deliver()
}

// CancelDeferred is the first phase of Cancel alone: it ends s and every
// live scope under it with err (ErrCanceled if nil) and returns the second
// phase, which the caller must Deliver, once, on the executor goroutine.
// In between, Err reports the end, nothing starts in these scopes and late
// resumes are dropped, but no continuation of theirs runs and no OnDone
// callback. The executor uses it to tell every session subscriber that a
// session ended before any continuation of that session runs.
func (s *Scope) CancelDeferred(err error) Delivery {
	if s.err != nil {
		return Delivery{}
	}
	if err == nil {
		err = ErrCanceled
	}
	var d Delivery
	s.end(err, &d)
	return d
}

// end sets err on s and on every live scope under it, and queues each on d,
// children first.
func (s *Scope) end(err error, d *Delivery) {
	s.err = err
	s.stopTimer()
	for c := s.children.head; c != nil; c = c.sibling.next {
		if c.err == nil { // an ended scope's subtree has ended already
			c.end(err, d)
		}
	}
	if d.tail == nil {
		d.head = s
	} else {
		d.tail.pending = s
	}
	d.tail = s
}

// stopTimer stops the timer of s's own deadline, if it has one running.
func (s *Scope) stopTimer() {
	if dl := s.dl; dl != nil && dl.owner == s && dl.timer != nil {
		dl.timer.Stop()
		dl.timer = nil
	}
}

// Delivery is the second phase of a cancellation (see CancelDeferred).
type Delivery struct{ head, tail *Scope }

// Deliver abandons the waits of the scopes the cancellation ended, so
// their chains receive its error, and runs their OnDone callbacks. It must
// be called once; the zero Delivery does nothing.
//
// A continuation or callback that panics does not keep the rest from
// hearing of the end: they are delivered before its panic goes on up
// (the executor, stopping on that panic, leaves no chain of the ended
// scopes without its outcome).
func (d Delivery) Deliver() {
	s := d.head
	var next *Scope
	if s != nil {
		next, s.pending = s.pending, nil
	}
	var fns []doner // the OnDone callbacks of s after the first, taken and not yet run
	defer func() {
		if s != nil {
			// Panicking (this call does not recover): what is left of
			// s, and the scopes after it, are delivered first.
			s.pending = next
			if len(fns) > 0 {
				s.more.onDone = fns
			}
			Delivery{head: s}.Deliver()
		}
	}()
	for s != nil {
		for w := s.waits.pop(); w != nil; w = s.waits.pop() {
			w.abandon(s.err)
		}
		fn1 := s.onDone1
		s.onDone1 = nil
		if m := s.more; m != nil {
			fns, m.onDone = m.onDone, nil
		}
		if fn1 != nil {
			fn1.scopeDone(s.err)
		}
		for len(fns) > 0 {
			fn := fns[0]
			fns = fns[1:]
			fn.scopeDone(s.err)
		}
		s = next
		if s != nil {
			next, s.pending = s.pending, nil
		}
	}
}

// unlinkChildren detaches every child of a closed scope (each has ended by
// then: a scope is canceled, with its children, before it closes). Their
// own Close later finds them unlinked and does nothing to the list.
func (s *Scope) unlinkChildren() {
	for c := s.children.head; c != nil; {
		next := c.sibling.next
		c.sibling = scopeLink{}
		c = next
	}
	s.children.head = nil
}

// Close ends the scope's life: it is detached from its parent, its
// children are detached from it, anything still waiting in it is abandoned
// with ErrCanceled, and its deferred cleanups start as flows of their own.
// The owner of a scope (whoever made it with Child or WithDeadline) closes
// it once, when the work it ran has delivered its outcome. A closed scope
// is linked nowhere, so nothing keeps it or its subtree alive but the
// owner's references.
func (s *Scope) Close() {
	if s.closed {
		return
	}
	if s.err == nil && (s.waits.head != nil || s.children.head != nil) {
		s.Cancel(ErrCanceled)
		if s.closed {
			// A continuation or an OnDone callback of the cancellation
			// closed it: that Close did the rest (and counted and ended
			// CloseAndWait's start once).
			return
		}
	}
	if s.err == nil {
		// Closed normally: nothing may start in a closed scope, and the
		// OnDone callbacks, for a cancellation, never run.
		s.err = ErrCanceled
		s.closedLive = true
		s.onDone1 = nil
		if m := s.more; m != nil {
			m.onDone = nil
		}
	}
	s.closed = true
	s.stopTimer()
	if s.parent != nil {
		s.parent.children.remove(s)
	}
	s.unlinkChildren()
	// Counted here, after the cancellation above, whose continuations and
	// OnDone callbacks may have withdrawn or added cleanups; one count
	// more while starting them, so that none ending at once calls done
	// early.
	cw := s.cleaned()
	if cw != nil {
		cw.n++
	}
	// Last registered first.
	if m := s.more; m != nil {
		for i := len(m.defers) - 1; i >= 0; i-- {
			if !m.defers[i].canceled {
				s.startCleanup(m.defers[i].t, cw)
			}
		}
		m.defers = nil
	}
	if s.hasDefer1 && !s.defer1Off {
		s.startCleanup(s.defer1, cw)
	}
	s.defer1 = nil
	cw.end()
}

// startCleanup starts cleanup t of the closing scope s as a flow of its
// own, counted in cw (if CloseAndWait was called).
func (s *Scope) startCleanup(t Task[Unit], cw *cleanups) {
	if cw == nil {
		// Nothing to count: Go's own continuation for a flow nobody
		// waits for reports the error, with no function made for it.
		Go(s, t, nil)
		return
	}
	cw.n++
	Go(s, t, func(_ Unit, err error) {
		if err != nil {
			s.env.rt.Report(err)
		}
		cw.end()
	})
}

// end counts one cleanup (or the start) ended; done runs at the last.
func (cw *cleanups) end() {
	if cw == nil {
		return
	}
	if cw.n--; cw.n == 0 {
		for _, done := range cw.done {
			done()
		}
	}
}

// CloseAndWait is Close, then done, on the executor goroutine, once every
// deferred cleanup that Close started has ended (at once if none did). On
// a scope already closed it calls done at once. A cleanup whose flow never
// ends (the executor closed before it ran) keeps done from running.
func (s *Scope) CloseAndWait(done func()) {
	if s.closed {
		done()
		return
	}
	if cw := s.cleaned(); cw != nil { // again, from within Close's cancellation
		cw.done = append(cw.done, done)
		return
	}
	m := s.extra()
	m.cw.done = []func(){done}
	m.cleaned = &m.cw
	s.Close()
}

// Defer registers cleanup to run when the scope closes, whatever its outcome
// (the returned function withdraws it, e.g. once a lock is acquired).
// Cleanups run last-registered first, each as a flow of its own: bound to
// the session current at that time, with no deadline (a cleanup is not
// bound by the deadline of the chain that registered it). Their errors go
// to the executor's error report. On a scope already closed, cleanup
// starts at once as a flow of its own, as Go starts it (a CloseAndWait
// does not wait for it), and the returned function does nothing.
func (s *Scope) Defer(cleanup Task[Unit]) (cancel func()) {
	if s.closed {
		Go(s, cleanup, nil)
		return func() {}
	}
	if !s.hasDefer1 {
		s.defer1, s.hasDefer1 = cleanup, true
		return func() { s.withdraw(0) }
	}
	m := s.extra()
	m.defers = append(m.defers, deferred{t: cleanup})
	i := len(m.defers)
	return func() { s.withdraw(i) }
}

// withdraw withdraws the i-th cleanup Defer registered (from 0), unless
// the scope has closed (its cleanups have started).
func (s *Scope) withdraw(i int) {
	switch {
	case s.closed:
	case i == 0:
		s.defer1Off = true
	default:
		s.more.defers[i-1].canceled = true
	}
}

// deferred is a cleanup Defer registered after the first.
type deferred struct {
	t        Task[Unit]
	canceled bool
}

// Go starts t as a new flow of its own, bound to the current session and
// with no deadline, and returns at once; done (which may be nil) receives
// its outcome on the executor goroutine. The new flow is queued on the task
// queue, so it starts after the current step.
func Go[T any](s *Scope, t Task[T], done Cont[T]) {
	c := s.env.rt.SessionScope().Child()
	if done == nil {
		done = reporter[T](s.env.rt)
	}
	s.env.rt.Schedule(func() { RunIn(c, t, done) })
}

// reporter returns the continuation of a flow nobody waits for: it hands
// an error to rt's Report. For a Task[Unit] (every deferred cleanup, most
// forks) it is one function per runtime, made on first use and kept in
// its Frames, rather than one per flow.
func reporter[T any](rt Runtime) Cont[T] {
	if _, unit := any(Cont[T](nil)).(Cont[Unit]); unit {
		fr := rt.frames()
		if fr.report == nil {
			fr.report = func(_ Unit, err error) {
				if err != nil {
					rt.Report(err)
				}
			}
		}
		return any(fr.report).(Cont[T])
	}
	return func(_ T, err error) {
		if err != nil {
			rt.Report(err)
		}
	}
}

// RunIn runs t in scope c, which the caller made (with Child or
// WithDeadline) and hands over, and delivers to k the first of t's outcome
// and c's cancellation: a deadline or cancel reaches k at once, even if t is
// parked on a queue that is paused, and t's late outcome is then dropped.
// RunIn closes c just before calling k, so c's deferred cleanups start.
func RunIn[T any](c *Scope, t Task[T], k Cont[T]) {
	if c.runIn {
		runInAgain(c, t, k)
		return
	}
	c.runIn = true
	finish := func(v T, err error) {
		if c.runDone {
			return
		}
		c.runDone = true
		c.Close()
		k(v, err)
	}
	c.onDone(contDone[T](finish)) // OnDone(finish with the zero T), with no function made for it
	Run(c, t, finish)
}

// runInAgain is RunIn in a scope another RunIn has taken (which its caller
// should not do): with a flag of its own, as the first one has c's.
func runInAgain[T any](c *Scope, t Task[T], k Cont[T]) {
	done := false
	finish := func(v T, err error) {
		if done {
			return
		}
		done = true
		c.Close()
		k(v, err)
	}
	c.onDone(contDone[T](finish))
	Run(c, t, finish)
}

// contDone is a continuation as a doner: a scope's cancellation gives it
// the zero value and the error.
type contDone[T any] Cont[T]

func (k contDone[T]) scopeDone(err error) {
	var zero T
	k(zero, err)
}

// Subscribe calls fn with every session event until cancel is called. A
// nil fn registers nothing.
func (s *Scope) Subscribe(fn func(Event)) (cancel func()) {
	if fn == nil {
		return func() {}
	}
	return s.env.rt.Subscribe(fn)
}

// intrusive lists

type scopeLink struct{ prev, next *Scope }

type scopeList struct{ head *Scope }

func (l *scopeList) push(s *Scope) {
	s.sibling.next = l.head
	if l.head != nil {
		l.head.sibling.prev = s
	}
	l.head = s
}

func (l *scopeList) remove(s *Scope) {
	if s.sibling.prev != nil {
		s.sibling.prev.sibling.next = s.sibling.next
	} else if l.head == s {
		l.head = s.sibling.next
	}
	if s.sibling.next != nil {
		s.sibling.next.sibling.prev = s.sibling.prev
	}
	s.sibling = scopeLink{}
}

type waiter interface {
	link() *waitLink
	abandon(err error)
}

// waitLink links a wait in its scope's list. The link back is to the
// previous wait's link, not the wait (an interface): removal needs no
// more, and so a link is 32 bytes.
type waitLink struct {
	owner *Scope
	prev  *waitLink
	next  waiter
}

func (l *waitLink) link() *waitLink { return l }

type waitList struct{ head waiter }

func (s *Scope) addWait(w waiter) {
	l := w.link()
	l.owner = s
	l.next = s.waits.head
	if s.waits.head != nil {
		s.waits.head.link().prev = l
	}
	s.waits.head = w
}

func (s *Scope) removeWait(w waiter) {
	l := w.link()
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		s.waits.head = l.next
	}
	if l.next != nil {
		l.next.link().prev = l.prev
	}
	l.owner, l.prev, l.next = nil, nil, nil
}

func (l *waitList) pop() waiter {
	w := l.head
	if w == nil {
		return nil
	}
	wl := w.link()
	wl.owner.removeWait(w)
	return w
}

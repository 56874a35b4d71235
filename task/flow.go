package task

import (
	"fmt"
	"iter"
	"runtime"
)

// Flow returns a task whose work is body, written as straight-line Go: the
// body awaits other tasks with Await, which returns their outcome. The
// task's value and error are what body returns. Like every Task it is a
// description: each run of it runs body afresh, in the Scope it is run in.
//
// The body runs as a coroutine in lockstep with the executor: only while
// the executor is running it, never beside another step, so the state it
// shares with other steps of the executor needs no lock. It is suspended
// at each Await (the executor goes on with other jobs) and resumed on the
// executor goroutine with the awaited task's outcome, or at once with the
// scope's error when the scope ends (deadline, cancel, session expiry,
// Close); the task's continuation is called once, when body returns. A
// panic in body is a panic of the step that resumed it. See FLOWS.md for
// the rules a body follows and the costs, measured.
//
// A nil body gives a task that fails with ErrNilFlowBody.
func Flow[T any](body func(f *F) (T, error)) Task[T] {
	if body == nil {
		return Fail[T](ErrNilFlowBody)
	}
	return func(s *Scope, k Cont[T]) {
		r := &flowRun[T]{body: body, k: k}
		r.f.s = s
		r.f.fin = r
		r.f.next, r.f.stop = iter.Pull(r.seq)
		s.env.rt.frames().bodies.add(&r.f)
		r.f.drive()
	}
}

// Await runs t in the body's scope and suspends the body until t's
// outcome, which it returns. If the scope ends first (a deadline, a
// cancel, the session's expiry, the executor's Close), Await returns the
// scope's error at once and t's late outcome is dropped; an Await in a
// scope that has ended returns its error without starting t.
//
// f must be the handle passed to the body that is running, used on the
// body's goroutine: Await after the body returned, or with the handle of
// an outer flow while an inner one runs, returns ErrAwaitOutsideBody;
// Await from another goroutine is undefined (task/FLOWS.md; the
// flowcheck analyzer flags goroutines that use a body's handle).
func Await[T any](f *F, t Task[T]) (T, error) {
	if f == nil {
		var zero T
		return zero, ErrAwaitOutsideBody
	}
	if f.unwinding {
		var zero T
		return zero, ErrUnwound
	}
	if b := f.set; b == nil || b.running != f {
		// Returned, suspended, or not the innermost body running (an
		// outer body's handle used in a flow it started with Run).
		var zero T
		return zero, ErrAwaitOutsideBody
	}
	a, ok := f.spare.(*awaiting[T]) // the record most recently used
	if ok {
		f.spare, a.next = a.next, nil
	} else if a = takeSpare[T](f); a == nil {
		a = &awaiting[T]{f: f}
		a.k = a.done
	}
	a.t = t
	f.pending = a
	if !f.yield(struct{}{}) {
		// The executor was abandoned (Unwind): unwind the body,
		// running its deferred functions, without resuming it.
		f.unwinding = true
		panic(errUnwind)
	}
	v, err := a.v, a.err
	if a.byTask {
		// t has called its continuation, its only call: the next Await
		// of the same type may use a again.
		a.v, a.err, a.fired, a.byTask = *new(T), nil, false, false
		a.next, f.spare = f.spare, a
	}
	return v, err
}

// maxSpares bounds the records an F keeps for later Awaits: one per
// type awaited, the most recently used first.
const maxSpares = 4

// takeSpare returns the record of type T that f keeps, taken off its list
// of spares, or nil. The spares are linked through their wait links,
// unused while a record is spare (it is in no scope's list), so keeping
// them costs no field. The search stops at maxSpares records, and drops
// those after: a body awaiting many types in turn keeps the last few.
func takeSpare[T any](f *F) *awaiting[T] {
	var prev *waitLink
	n := 0
	for w := f.spare; w != nil; {
		l := w.link()
		if a, ok := w.(*awaiting[T]); ok {
			if prev == nil {
				f.spare = l.next
			} else {
				prev.next = l.next
			}
			l.next = nil
			return a
		}
		if n++; n == maxSpares {
			l.next = nil
			return nil
		}
		prev, w = l, l.next
	}
	return nil
}

// ErrNilFlowBody is the error of a Flow given a nil body.
var ErrNilFlowBody error = fmt.Errorf("%w: nil flow body", ErrInvalidArgument)

// ErrAwaitOutsideBody is the error of an Await made with a handle whose
// body is not the one running: from another goroutine, after the body
// returned, or with the handle of another flow.
var ErrAwaitOutsideBody error = fmt.Errorf("%w: task.Await outside the running body of its flow", ErrInvalidArgument)

// ErrUnwound is the error of an Await made by a deferred function of a
// body that is being unwound (Unwind): nothing more runs for it.
var ErrUnwound = ClientError("task: flow body unwound (its executor was abandoned)")

// errUnwind is the panic that unwinds an abandoned body; its coroutine
// recovers it.
var errUnwind = ClientError("task: unwinding an abandoned flow body")

// F is the handle a body written with Flow awaits through. It is valid
// only inside that body, on the goroutine the body runs on.
type F struct {
	s       *Scope
	next    func() (struct{}, bool)
	stop    func()
	yield   func(struct{}) bool
	pending starter  // what the body awaits, until the driver starts it
	fin     finisher // the flowRun: delivers the outcome
	set     *bodies
	prev    *F
	nextF   *F
	drv     func() // f.rebound as a value, made when first trampolined
	// The *awaiting[T] records done with, for the next Await of their T:
	// one per type at most, linked through their waitLink.next.
	spare waiter

	inStart   bool       // the driver is starting what the body awaits
	ready     bool       // ... and its outcome came synchronously
	bounced   bool       // a resume is queued (bounce): the first to run drives
	bw        bounceWait // the bounce as a wait in the scope, so that its end reaches it
	unwinding bool
}

// Scope returns the scope the body runs in, for what a body reads from
// it (the clock, the session, the deadline). Its operations are the
// tasks the body awaits.
func (f *F) Scope() *Scope { return f.s }

type starter interface{ start() }

type finisher interface{ finish() }

// drive resumes the body and starts what it awaits, in a loop while
// those outcomes come synchronously: the body's awaits never nest on the
// executor's stack. Past maxDepth synchronous awaits in one job, the
// next resume is bounced (bounce).
func (f *F) drive() {
	if f.unwinding {
		return // unwound while a resume was queued: nothing more runs
	}
	// While the body runs, it is the one running on the runtime: Await
	// accepts its handle alone. A body may be driven from another's code
	// (started with Run, or resumed by what that code does): that one is
	// running again when this one yields or returns. (A panic leaves it
	// set until the runtime's next job, NewJob: not restored with a
	// defer, which would cost each resume.)
	b := f.set
	outer := b.running
	for n := 0; ; n++ {
		b.running = f
		_, ok := f.next()
		b.running = outer
		if !ok {
			b.remove(f)
			f.fin.finish()
			return
		}
		p := f.pending
		f.pending = nil
		f.ready = false
		f.inStart = true
		p.start()
		f.inStart = false
		if !f.ready {
			return // suspended until the outcome, or the scope's end
		}
		if n >= maxDepth {
			f.bounce()
			return
		}
	}
}

// bounce queues the body's next resume through the task queue, as Resume
// does, so that other jobs run. The task queue is paused while the
// session is not connected; when the body's scope has ended (its Awaits
// return the error at once), the resume is also queued on the event queue
// (a timer due now), which runs while suspended: the body runs on to its
// return without waiting for a reconnect, also when the connection is
// lost after the scope ended, before the task queue ran the resume.
// Whichever runs first resumes the body; the other does nothing.
func (f *F) bounce() {
	if f.drv == nil {
		f.drv = f.rebound
	}
	f.bounced = true
	rt := f.s.env.rt
	rt.Schedule(f.drv)
	if f.s.err == nil {
		f.bw.f = f
		f.s.addWait(&f.bw)
	}
	if f.s.err != nil {
		// Also while connected: the connection may be lost before the
		// task queue runs the resume.
		rt.AfterFunc(rt.Clock().Now(), f.drv)
	}
}

// rebound is a bounced resume: the first of its queued calls drives the
// body.
func (f *F) rebound() {
	if f.bounced {
		f.bounced = false
		if f.bw.owner != nil {
			f.bw.owner.removeWait(&f.bw)
		}
		f.drive()
	}
}

// resumed is called with the outcome of what the body awaits.
func (f *F) resumed() {
	if f.unwinding {
		return // unwound: nothing more runs for it
	}
	if f.inStart {
		f.ready = true
		return
	}
	f.drive()
}

// flowRun is one run of a Flow: the body, the continuation and the
// outcome.
type flowRun[T any] struct {
	f    F
	body func(*F) (T, error)
	k    Cont[T]
	v    T
	err  error
}

func (r *flowRun[T]) seq(yield func(struct{}) bool) {
	r.f.yield = yield
	defer r.unwound()
	runBody(r)
}

// unwound recovers the panic that unwinds an abandoned body, and only
// that one.
func (r *flowRun[T]) unwound() {
	if !r.f.unwinding {
		return
	}
	if p := recover(); p != nil && p != errUnwind {
		panic(p)
	}
}

func (r *flowRun[T]) runBody() { r.v, r.err = r.body(&r.f) }

func (r *flowRun[T]) finish() {
	v, err := r.v, r.err
	r.v, r.err = *new(T), nil
	Resume(r.f.s, r.k, v, err)
}

// awaiting is one Await: a wait in the body's scope, so that the scope's
// end reaches it, and the continuation of the awaited task.
type awaiting[T any] struct {
	waitLink
	f      *F
	t      Task[T]
	k      Cont[T] // a.done, made once
	v      T
	err    error
	fired  bool // the outcome is in (from t, or the scope's end)
	byTask bool // ... from t
}

func (a *awaiting[T]) start() {
	s := a.f.s
	t := a.t
	a.t = nil
	if s.err != nil {
		// The scope has ended: its error, at once. Run would hand it
		// through Resume, which past maxDepth queues it on the task
		// queue, paused while the session is not connected; the driver
		// keeps the stack flat (and bounces past maxDepth).
		var zero T
		a.done(zero, s.err)
		return
	}
	s.addWait(a)
	Run(s, t, a.k)
}

func (a *awaiting[T]) done(v T, err error) {
	if a.fired {
		return // the scope ended first: a late outcome, dropped
	}
	if a.owner != nil && a.owner.err != nil {
		// The scope has ended and the wait's abandonment is on its way
		// (Cancel delivers it): this outcome is late, dropped. t has
		// called back, its only call, so a may be used again.
		a.byTask = true
		return
	}
	a.fired, a.byTask = true, true
	if a.owner != nil {
		a.owner.removeWait(a)
	}
	a.v, a.err = v, err
	a.f.resumed()
}

func (a *awaiting[T]) abandon(err error) {
	if a.fired {
		return
	}
	a.fired = true
	a.err = err
	a.f.resumed()
}

// bodies is the set of Flow bodies alive on one runtime (started, not yet
// returned), kept in its Frames so that it can unwind them when it is
// abandoned.
type bodies struct {
	head    *F
	n       int
	running *F // the body running now, the innermost if one started another
}

// len returns the number of bodies alive.
func (b *bodies) len() int { return b.n }

func (b *bodies) add(f *F) {
	f.set = b
	f.nextF = b.head
	if b.head != nil {
		b.head.prev = f
	}
	b.head = f
	b.n++
}

func (b *bodies) remove(f *F) {
	if f.set != b {
		return
	}
	if f.prev != nil {
		f.prev.nextF = f.nextF
	} else {
		b.head = f.nextF
	}
	if f.nextF != nil {
		f.nextF.prev = f.prev
	}
	f.prev, f.nextF, f.set = nil, nil, nil
	b.n--
}

// unwind ends every body alive without resuming it (Unwind).
func (b *bodies) unwind() {
	// A body whose deferred function panics sends the panic on up from
	// its stop: the other bodies are unwound before it goes on.
	defer func() {
		if b.head != nil {
			b.unwind()
		}
	}()
	for b.head != nil {
		f := b.head
		b.remove(f)
		f.unwinding = true
		f.stop()
	}
}

type bodyRunner interface{ runBody() }

// runBody runs a body: its frame is on the stack of the goroutine that
// runs a body, and only there (InFlowBody).
//
//go:noinline
func runBody(b bodyRunner) { b.runBody() }

type pcProbe struct{ pc *[1]uintptr }

func (p pcProbe) runBody() { runtime.Callers(2, p.pc[:]) }

// bodyReturnPC is the return address of runBody's call, as
// runtime.Callers reports it.
var bodyReturnPC = func() uintptr {
	var pc [1]uintptr
	runBody(pcProbe{&pc})
	return pc[0]
}()

// InFlowBody reports whether the calling goroutine is running the body of
// a Flow. Such a body runs in lockstep with its executor, as a step does:
// a blocking call there would wait for the executor it stalls, so
// blocking APIs (executor.CanBlock) refuse it. It walks the caller's
// stack (a few hundred nanoseconds).
func InFlowBody() bool {
	var buf [32]uintptr
	pcs := buf[:]
	for {
		n := runtime.Callers(2, pcs)
		for _, pc := range pcs[:n] {
			if pc == bodyReturnPC {
				return true
			}
		}
		if n < len(pcs) {
			return false
		}
		pcs = make([]uintptr, 4*len(pcs))
	}
}

// bounceWait is a bounced resume as a wait in the body's scope: the
// scope's end queues the resume on the event queue too (the Awaits after
// it return the error at once), which runs while the task queue is
// paused, paused already or by a connection lost afterwards.
type bounceWait struct {
	waitLink
	f *F
}

func (w *bounceWait) abandon(error) {
	f := w.f
	if !f.bounced || f.unwinding {
		return
	}
	// Also while connected: the connection may be lost before the task
	// queue runs the resume.
	rt := f.s.env.rt
	rt.AfterFunc(rt.Clock().Now(), f.drv)
}

package executor

import "github.com/zkflow/zkflow/task"

// job is one unit of work of the executor: a function, a runner (a
// submitted flow's start), or a request's outcome for its Receiver. An
// outcome's Response travels beside its job, in a FIFO of its own (jobs
// and responses are pushed and popped in the same order), so that other
// jobs stay small and handing an outcome to the executor allocates
// nothing.
type job struct {
	fn   func()
	x    any     // a runner, a task.Receiver (an outcome) or a task.Watcher (a notice), when fn is nil
	kind jobKind // what x is: set where the job is pushed, so that running it asks no interface of x
}

// jobKind says what a job is.
type jobKind uint8

const (
	jobFunc    jobKind = iota // fn
	jobRunner                 // x is a runner
	jobOutcome                // x is a task.Receiver; its response travels in the queue's resps
	jobNotice                 // x is a task.Watcher; its event travels in the queue's evs
)

// runner is a job that is a value rather than a function.
type runner interface{ run() }

// queue is a FIFO of jobs with the responses of the outcome jobs and the
// events of the notices (a watch's notification for its Watcher), so
// that handing a notification to the executor allocates nothing either.
type queue struct {
	jobs  jobs
	resps fifo[task.Response]
	evs   fifo[task.Event]
}

// push appends j, and resp (non-nil exactly when j is an outcome: push
// marks it so).
func (q *queue) push(j job, resp *task.Response) {
	if resp != nil {
		j.kind = jobOutcome
		q.resps.push(*resp)
	}
	q.jobs.push(j)
}

// clear drops every job, response and notice, and reports how many jobs
// there were.
func (q *queue) clear() int {
	n := q.jobs.size
	var j job
	for q.jobs.pop(&j) {
	}
	var r task.Response
	for q.resps.pop(&r) {
	}
	var ev task.Event
	for q.evs.pop(&ev) {
	}
	return n
}

// pushNotice appends a notice: ev for w.
func (q *queue) pushNotice(w task.Watcher, ev *task.Event) {
	q.jobs.push(job{x: w, kind: jobNotice})
	q.evs.push(*ev)
}

// pop moves the oldest job into j (and its response into resp, for an
// outcome, or its event into ev, for a notice) and reports whether there
// was one.
func (q *queue) pop(j *job, resp *task.Response, ev *task.Event) bool {
	if !q.jobs.pop(j) {
		return false
	}
	switch j.kind {
	case jobNotice:
		q.evs.pop(ev)
	case jobOutcome:
		q.resps.pop(resp)
	}
	return true
}

// jobs is fifo[job] written out: a FIFO every step passes through, where
// the generic version's shared code cost a step about ten nanoseconds
// (BenchmarkStep).
type jobs struct {
	buf        []job
	head, size int
}

func (r *jobs) push(v job) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = v
	r.size++
}

func (r *jobs) pop(v *job) bool {
	if r.size == 0 {
		return false
	}
	*v = r.buf[r.head]
	r.buf[r.head] = job{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	return true
}

func (r *jobs) grow() {
	n := max(len(r.buf)*2, minQueue)
	buf := make([]job, n)
	for i := 0; i < r.size; i++ {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

// minQueue is the size (a power of two) a queue's buffer starts at. Most
// executors never hold more than a few jobs at once, and a simulation makes
// many executors per seed: a small start keeps their first pushes from
// allocating (and clearing) buffers they never fill (a Response is about
// 200 bytes).
const minQueue = 8

// fifo is a FIFO on a power-of-two ring buffer. It grows when full and
// never shrinks, so pushing and popping allocate nothing once it has
// reached the size a workload needs.
type fifo[T any] struct {
	buf        []T
	head, size int
}

func (r *fifo[T]) push(v T) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = v
	r.size++
}

func (r *fifo[T]) pop(v *T) bool {
	if r.size == 0 {
		return false
	}
	var zero T
	*v = r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	return true
}

func (r *fifo[T]) grow() {
	n := max(len(r.buf)*2, minQueue)
	buf := make([]T, n)
	for i := 0; i < r.size; i++ {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

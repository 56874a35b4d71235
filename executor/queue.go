package executor

import "github.com/zkflow/zkflow/task"

// job is one unit of work of the executor: a function, a runner (a
// submitted flow's start), or a request's outcome for its Receiver (kept
// by value, so that handing an outcome to the executor allocates nothing).
type job struct {
	fn   func()
	r    runner
	rcv  task.Receiver
	resp task.Response
}

// runner is a job that is a value rather than a function.
type runner interface{ run() }

// ring is a FIFO of jobs on a power-of-two ring buffer. It grows when full
// and never shrinks, so pushing and popping allocate nothing once it has
// reached the size a workload needs.
type ring struct {
	buf        []job
	head, size int
}

func (r *ring) push(j job) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = j
	r.size++
}

// pop moves the oldest job into j and reports whether there was one.
func (r *ring) pop(j *job) bool {
	if r.size == 0 {
		return false
	}
	*j = r.buf[r.head]
	r.buf[r.head] = job{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	return true
}

func (r *ring) grow() {
	n := len(r.buf) * 2
	if n == 0 {
		n = 64
	}
	buf := make([]job, n)
	for i := 0; i < r.size; i++ {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

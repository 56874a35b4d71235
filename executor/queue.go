package executor

// ring is a FIFO of jobs on a power-of-two ring buffer. It grows when full
// and never shrinks, so pushing and popping allocate nothing once it has
// reached the size a workload needs.
type ring struct {
	buf        []func()
	head, size int
}

func (r *ring) push(fn func()) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = fn
	r.size++
}

func (r *ring) pop() func() {
	if r.size == 0 {
		return nil
	}
	fn := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	return fn
}

func (r *ring) grow() {
	n := len(r.buf) * 2
	if n == 0 {
		n = 64
	}
	buf := make([]func(), n)
	for i := 0; i < r.size; i++ {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

package zkadapter

import "sync"

// queue is the one delivery path of a Conn: an unbounded FIFO of callback
// invocations drained by one goroutine, so every callback of the Conn
// (events, done, watch) runs on that goroutine, one at a time, in push
// order. push never blocks (the go-zookeeper receive goroutine pushes) and
// never drops.
type queue struct {
	mu      sync.Mutex
	items   []func()
	closed  bool
	started bool
	wake    chan struct{} // capacity 1: "there may be items"
	done    chan struct{} // closed when the drainer has returned

	inline sync.Mutex // serializes calls made after the drainer returned
}

func newQueue() *queue {
	return &queue{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// push appends f. After close it runs f on the caller's goroutine instead,
// once the drainer has finished, so a callback is never lost and never
// runs concurrently with another.
func (q *queue) push(f func()) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		<-q.done
		q.inline.Lock()
		defer q.inline.Unlock()
		f()
		return
	}
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// start starts the drainer once.
func (q *queue) start() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		return
	}
	q.started = true
	go q.run()
}

// close lets the drainer return once it has run everything pushed before,
// and waits for it. The drainer is started if it was not.
func (q *queue) close() {
	q.start()
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}

func (q *queue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		for i, f := range items {
			items[i] = nil
			f()
		}
		if len(items) == 0 {
			if closed {
				return
			}
			<-q.wake
		}
	}
}

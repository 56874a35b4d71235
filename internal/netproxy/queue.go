package netproxy

import (
	"sync"
	"time"
)

// chunk is what one read returned: data, or the error (io.EOF included)
// that ended the source, and when it is due at the destination.
type chunk struct {
	data []byte
	err  error
	due  time.Time // zero: at once
}

// queue is one direction's chunks, in read order, between its reader and
// its writer (one of each). It holds up to queueSize bytes; the reader
// waits beyond that. Neither side waits while holding mu: each waits on a
// one-slot signal channel, sent after the state it announces has changed,
// and checks again when woken.
type queue struct {
	mu     sync.Mutex
	chunks []chunk
	bytes  int
	ready  chan struct{} // a chunk was pushed
	space  chan struct{} // a chunk was popped
}

func newQueue() *queue {
	return &queue{ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// push appends c, waiting while the queue is full. It reports false,
// without appending, if stop closes first.
func (q *queue) push(c chunk, stop <-chan struct{}) bool {
	for {
		q.mu.Lock()
		if q.bytes < queueSize {
			q.chunks = append(q.chunks, c)
			q.bytes += len(c.data)
			q.mu.Unlock()
			signal(q.ready)
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-stop:
			return false
		}
	}
}

// pop removes the oldest chunk, waiting while the queue is empty. It
// reports false if stop closes first.
func (q *queue) pop(stop <-chan struct{}) (chunk, bool) {
	for {
		q.mu.Lock()
		if len(q.chunks) > 0 {
			c := q.chunks[0]
			q.chunks[0] = chunk{}
			q.chunks = q.chunks[1:]
			q.bytes -= len(c.data)
			q.mu.Unlock()
			signal(q.space)
			return c, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-stop:
			return chunk{}, false
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Package scriptconn is a task.Conn that a test drives by hand: it records
// every request and answers only when told, and it reports the session
// events the test scripts. It is for the runtime's own tests, before (and
// beside) fakezk.
package scriptconn

import (
	"sync"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Conn is a scripted task.Conn. Its methods are safe from any goroutine;
// callbacks run on the goroutine of the method that triggers them.
type Conn struct {
	mu     sync.Mutex
	events func(task.Event)
	reqs   []*Call
	closed bool
	// Auto, if set, answers every request at once, from inside Do.
	Auto func(task.Request) task.Response
}

// Call is one request seen by the Conn.
type Call struct {
	Req      task.Request
	done     func(task.Response)
	watch    func(task.Event)
	answered bool
}

// New returns a Conn with nothing scripted.
func New() *Conn { return &Conn{} }

// Start implements task.Conn.
func (c *Conn) Start(events func(task.Event)) error {
	c.mu.Lock()
	c.events = events
	c.mu.Unlock()
	return nil
}

// Do implements task.Conn.
func (c *Conn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.mu.Lock()
	call := &Call{Req: req, done: done, watch: watch}
	c.reqs = append(c.reqs, call)
	auto, closed := c.Auto, c.closed
	c.mu.Unlock()
	switch {
	case closed:
		call.Reply(task.Response{Err: task.ErrClosed})
	case auto != nil:
		call.Reply(auto(req))
	}
}

// Close implements task.Conn.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	calls := append([]*Call(nil), c.reqs...)
	ev := c.events
	c.mu.Unlock()
	for _, call := range calls {
		if !call.answered {
			call.Reply(task.Response{Err: task.ErrClosed})
		}
	}
	if ev != nil {
		ev(task.Event{Type: task.EventNone, State: task.StateClosed})
	}
	return nil
}

// Calls returns the requests seen so far, oldest first.
func (c *Conn) Calls() []*Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Call(nil), c.reqs...)
}

// Pending returns the requests not answered yet, oldest first.
func (c *Conn) Pending() []*Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Call
	for _, r := range c.reqs {
		if !r.answered {
			out = append(out, r)
		}
	}
	return out
}

// Event reports a session event.
func (c *Conn) Event(ev task.Event) {
	c.mu.Lock()
	f := c.events
	c.mu.Unlock()
	f(ev)
}

// Connect reports a usable session with the given id.
func (c *Conn) Connect(id int64) {
	c.Event(task.Event{Type: task.EventNone, State: task.StateConnected, SessionID: id, Timeout: 10 * time.Second})
}

// Suspend reports a lost connection.
func (c *Conn) Suspend() { c.Event(task.Event{Type: task.EventNone, State: task.StateSuspended}) }

// Expire reports the session's expiry.
func (c *Conn) Expire() { c.Event(task.Event{Type: task.EventNone, State: task.StateExpired}) }

// Reply answers the call. A second reply panics: the contract says once.
func (r *Call) Reply(resp task.Response) {
	if r.answered {
		panic("scriptconn: request answered twice")
	}
	r.answered = true
	r.done(resp)
}

// Fail answers the call with err.
func (r *Call) Fail(err error) { r.Reply(task.Response{Err: err}) }

// Fire delivers the call's watch event.
func (r *Call) Fire(ev task.Event) { r.watch(ev) }

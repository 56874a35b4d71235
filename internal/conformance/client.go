package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
)

// waitLimit bounds how long a case waits for a real server's callback.
const waitLimit = 20 * time.Second

// Client drives one task.Conn synchronously for a case: it sends, lets the
// target settle, and waits for the callbacks, which only record what they
// get (they run on the Conn's goroutine and must not block).
type Client struct {
	t    testing.TB
	tgt  Target
	Conn task.Conn

	mu     sync.Mutex
	states []task.Event
	seq    int // callbacks so far: orders responses and watch events
	notify chan struct{}
}

func newClient(t testing.TB, tgt Target, timeout time.Duration) *Client {
	t.Helper()
	return startClient(t, tgt, tgt.NewConn(t, timeout))
}

func startClient(t testing.TB, tgt Target, conn task.Conn) *Client {
	t.Helper()
	c := &Client{t: t, tgt: tgt, Conn: conn, notify: make(chan struct{}, 1)}
	if err := c.Conn.Start(c.onEvent); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { c.Conn.Close(); tgt.Settle() })
	c.WaitState(task.StateConnected, 1)
	return c
}

func (c *Client) poke() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *Client) onEvent(ev task.Event) {
	c.mu.Lock()
	c.states = append(c.states, ev)
	c.mu.Unlock()
	c.poke()
}

// wait settles the target and waits until cond holds.
func (c *Client) wait(what string, cond func() bool) {
	c.t.Helper()
	c.tgt.Settle()
	if cond() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for !cond() {
		select {
		case <-c.notify:
		case <-ctx.Done():
			c.t.Fatalf("timed out waiting for %s", what)
		}
		c.tgt.Settle()
	}
}

// States returns the session events received so far.
func (c *Client) States() []task.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]task.Event(nil), c.states...)
}

// WaitState waits until the n-th session event with state st has arrived
// and returns it.
func (c *Client) WaitState(st task.State, n int) task.Event {
	c.t.Helper()
	var got task.Event
	c.wait("session state "+st.String(), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		k := 0
		for _, ev := range c.states {
			if ev.State == st {
				k++
				if k == n {
					got = ev
					return true
				}
			}
		}
		return false
	})
	return got
}

// SessionID is the id of the latest StateConnected event.
func (c *Client) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.states) - 1; i >= 0; i-- {
		if c.states[i].State == task.StateConnected {
			return c.states[i].SessionID
		}
	}
	return 0
}

// Pending is a request whose response may not have arrived yet.
type Pending struct {
	c    *Client
	resp task.Response
	n    int
	at   int // the client's callback count when the response arrived
}

// Send sends req without waiting.
func (c *Client) Send(req task.Request) *Pending {
	p := &Pending{c: c}
	c.Conn.Do(req, p.done, nil)
	return p
}

func (p *Pending) done(r task.Response) {
	p.c.mu.Lock()
	p.c.seq++
	p.resp, p.at = r, p.c.seq
	p.n++
	p.c.mu.Unlock()
	p.c.poke()
}

// At is the position of the response among the client's callbacks.
func (p *Pending) At() int {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.at
}

// Wait waits for the response.
func (p *Pending) Wait() task.Response {
	p.c.t.Helper()
	p.c.wait("response", func() bool {
		p.c.mu.Lock()
		defer p.c.mu.Unlock()
		return p.n > 0
	})
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.n != 1 {
		p.c.t.Errorf("done called %d times", p.n)
	}
	return p.resp
}

// Do sends req and waits for its response.
func (c *Client) Do(req task.Request) task.Response {
	c.t.Helper()
	return c.Send(req).Wait()
}

// Watch records what a request's watch callback receives.
type Watch struct {
	c   *Client
	evs []task.Event
	at  []int // positions among the client's callbacks
}

// DoW sends req with a watch callback and waits for the response.
func (c *Client) DoW(req task.Request) (task.Response, *Watch) {
	c.t.Helper()
	w := &Watch{c: c}
	p := &Pending{c: c}
	c.Conn.Do(req, p.done, func(ev task.Event) {
		c.mu.Lock()
		c.seq++
		w.evs = append(w.evs, ev)
		w.at = append(w.at, c.seq)
		c.mu.Unlock()
		c.poke()
	})
	return p.Wait(), w
}

// Events returns what the watch received so far.
func (w *Watch) Events() []task.Event {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return append([]task.Event(nil), w.evs...)
}

// FiredAt is the position of the watch's first event among the client's
// callbacks (0 if it has not fired).
func (w *Watch) FiredAt() int {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if len(w.at) == 0 {
		return 0
	}
	return w.at[0]
}

// Wait waits for the watch to fire and returns the event.
func (w *Watch) Wait() task.Event {
	w.c.t.Helper()
	w.c.wait("watch", func() bool {
		w.c.mu.Lock()
		defer w.c.mu.Unlock()
		return len(w.evs) > 0
	})
	return w.Events()[0]
}

// Barrier makes a round trip on the client's session. ZooKeeper delivers a
// watch event to a client before any response that reflects the change, so
// after a barrier that follows a write, every notification the write
// caused for this client has arrived.
func (c *Client) Barrier() {
	c.t.Helper()
	c.Do(&task.SyncRequest{Path: "/"})
	c.Do(&task.ExistsRequest{Path: "/"})
}

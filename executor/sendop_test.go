package executor_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// holdConn is a Conn that holds every request until the test completes
// it, in any order.
type holdConn struct {
	mu     sync.Mutex
	events func(task.Event)
	held   []held
}

type held struct {
	req  task.Request
	done func(task.Response)
}

func (c *holdConn) Start(events func(task.Event)) error {
	c.events = events
	events(task.Event{Type: task.EventNone, State: task.StateConnected, SessionID: 1})
	return nil
}

func (c *holdConn) Do(req task.Request, done func(task.Response), _ func(task.Event)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = append(c.held, held{req, done})
}

func (c *holdConn) Close() error {
	c.mu.Lock()
	h := c.held
	c.held = nil
	c.mu.Unlock()
	for _, r := range h {
		r.done(task.Response{Err: task.ErrClosed})
	}
	c.events(task.Event{Type: task.EventNone, State: task.StateClosed})
	return nil
}

// complete answers the held request at index i (the response's Path
// echoes the request's) and forgets it.
func (c *holdConn) complete(i int) {
	c.mu.Lock()
	r := c.held[i]
	c.held = append(c.held[:i], c.held[i+1:]...)
	c.mu.Unlock()
	r.done(task.Response{Path: r.req.NodePath()})
}

// Requests in flight together, answered out of order, with new requests
// sent between the answers (so that they reuse what the answered ones
// held): every flow gets the response to its own request, once. The
// executor, observed and not, recycles per-request state; a recycling
// that let a request's state go before its outcome reached the flow would
// hand one flow another's response.
func TestOutOfOrderOutcomesReachTheirFlows(t *testing.T) {
	for _, observed := range []bool{false, true} {
		t.Run(fmt.Sprintf("observed=%v", observed), func(t *testing.T) {
			var obs *task.Observer
			if observed {
				obs = &task.Observer{OnOpEnd: func(task.OpDone) {}}
			}
			conn := &holdConn{}
			ex, err := executor.New(executor.Config{Conn: conn, Seed: 1, Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Shutdown()
			got := map[string]int{}
			send := func(path string) {
				executor.Submit(ex, task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
					task.Exec(s, &task.GetDataRequest{Path: path}, func(r task.Response, err error) {
						if err != nil || r.Path != path {
							t.Errorf("get %s: got the response for %q, %v", path, r.Path, err)
						}
						got[path]++
						k(task.Unit{}, nil)
					})
				}), func(task.Unit, error) {})
			}
			n := 0
			for round := 0; round < 5; round++ {
				// The round's flows are submitted, then the newest half
				// of the held requests answered (last first): the flows
				// send their requests before the executor hands those
				// outcomes on.
				for i := 0; i < 5; i++ {
					send(fmt.Sprintf("/r%d-%d", round, i))
					n++
				}
				for i := len(conn.held) - 1; i >= len(conn.held)/2; i-- {
					conn.complete(i)
				}
				ex.RunUntilIdle()
			}
			for len(conn.held) > 0 {
				conn.complete(len(conn.held) / 2)
				ex.RunUntilIdle()
			}
			if len(got) != n {
				t.Fatalf("%d flows got a response, want %d", len(got), n)
			}
			for p, c := range got {
				if c != 1 {
					t.Errorf("flow of %s resumed %d times", p, c)
				}
			}
		})
	}
}

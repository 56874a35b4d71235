package lock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// counting is a Conn that counts the requests a client sends (in all, the
// children listings of the directory, and by kind) and remembers its
// requests with a watch whose watch has not fired (for the herd check of
// the simulation: exists and getData set data watches, getChildren on a
// contender node the child watch of a waiter).
type counting struct {
	*fakezk.Conn
	client  int
	sent    int // requests of every kind
	lists   int // listings of a directory (not of a contender node)
	kinds   map[string]int
	watches map[*pending]bool
}

// pending is a watch (exists, getData, getChildren) a client registered
// on path during session sess, not fired yet.
type pending struct {
	client int
	path   string
	sess   int64
	set    bool // the reply came: the watch is set
	// stale: set by an attempt that has given up since (a deadline); it
	// fires once, to be ignored, and is no waiter's.
	stale bool
}

func (c *counting) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.sent++
	if c.kinds == nil {
		c.kinds = map[string]int{}
	}
	c.kinds[fmt.Sprintf("%T", req)[len("*task."):]]++
	path := ""
	switch r := req.(type) {
	case *task.GetChildrenRequest:
		if !strings.Contains(r.Path, "lock-") {
			c.lists++
		}
		if r.Watch {
			path = r.Path
		}
	case *task.ExistsRequest:
		if watch != nil {
			path = r.Path
		}
	case *task.GetDataRequest:
		if r.Watch {
			path = r.Path
		}
	}
	if path != "" && watch != nil {
		p := &pending{client: c.client, path: path, sess: c.SessionID()}
		c.watches[p] = true
		inner := watch
		watch = func(ev task.Event) {
			delete(c.watches, p)
			inner(ev)
		}
		// The watch counts once the reply says it was set: a request
		// that fails sets none (an exists that finds no node does), such
		// as one refused because the flow's session has ended, or lost
		// with the connection.
		_, exists := req.(*task.ExistsRequest)
		innerDone := done
		done = func(r task.Response) {
			if r.Err != nil && !(exists && errors.Is(r.Err, task.ErrNoNode)) {
				delete(c.watches, p)
			} else if c.watches[p] {
				p.set = true
			}
			innerDone(r)
		}
	}
	c.Conn.Do(req, done, watch)
}

// newWorld is a sim.World of n clients whose connections count requests
// (cnts[i] is client i's); it is closed when the test ends.
func newWorld(t testing.TB, seed uint64, n int, cfg fakezk.Config) (*sim.World, []*counting) {
	t.Helper()
	w, cnts, err := newCounted(seed, n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, cnts
}

// newCounted is newWorld for the caller to close.
func newCounted(seed uint64, n int, cfg fakezk.Config) (*sim.World, []*counting, error) {
	cnts := make([]*counting, n)
	w, err := sim.New(sim.Config{Seed: seed, Clients: n, Server: cfg,
		Wrap: func(i int, conn *fakezk.Conn) task.Conn {
			cnts[i] = &counting{Conn: conn, client: i, watches: map[*pending]bool{}}
			return cnts[i]
		}})
	return w, cnts, err
}

// mustRun runs t on client i to its end; a flow that never ends fails the
// test.
func mustRun[T any](tb testing.TB, w *sim.World, i int, t task.Task[T]) (T, error) {
	tb.Helper()
	v, err := sim.Run(w, i, t)
	if err == sim.ErrStuck {
		tb.Fatalf("task on client %d never ended", i)
	}
	return v, err
}

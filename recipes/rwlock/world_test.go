package rwlock_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// watching is a Conn that remembers the exists-with-watch requests its
// client sent whose watch has not fired, and counts its listings.
type watching struct {
	*fakezk.Conn
	lists   int
	watches map[*string]bool
}

func (c *watching) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	switch r := req.(type) {
	case *task.GetChildrenRequest:
		c.lists++
	case *task.ExistsRequest:
		if watch != nil {
			p := &r.Path
			c.watches[p] = true
			inner := watch
			watch = func(ev task.Event) {
				delete(c.watches, p)
				inner(ev)
			}
		}
	}
	c.Conn.Do(req, done, watch)
}

// watched are the paths client c watches with exists now.
func (c *watching) watched() []string {
	var out []string
	for p := range c.watches {
		out = append(out, *p)
	}
	return out
}

// newWorld is a sim.World of n clients whose connections remember their
// watches; it is closed when the test ends.
func newWorld(t testing.TB, n int) (*sim.World, []*watching) {
	t.Helper()
	ws := make([]*watching, n)
	w, err := sim.New(sim.Config{Seed: 1, Clients: n, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		ws[i] = &watching{Conn: conn, watches: map[*string]bool{}}
		return ws[i]
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, ws
}

// mustRun runs t on client i to its end; a flow that never ends fails the
// test.
func mustRun[T any](tb testing.TB, w *sim.World, i int, t task.Task[T]) (T, error) {
	tb.Helper()
	v, err := sim.Run(w, i, t)
	if errors.Is(err, sim.ErrStuck) {
		tb.Fatalf("task on client %d never ended", i)
	}
	return v, err
}

func mustLock(t testing.TB, dir string) *rwlock.RWLock {
	t.Helper()
	l, err := rwlock.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func noReportedErrors(t *testing.T, w *sim.World) {
	t.Helper()
	for _, err := range w.Errs {
		t.Errorf("detached flow failed: %v", err)
	}
}

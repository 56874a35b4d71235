package election_test

import (
	"sync"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// watcher is a Conn that records, for each node deleted, which clients a
// watch on it woke, and counts the children listings a client sends.
type watcher struct {
	*fakezk.Conn
	client int
	log    *wakeLog
}

// wakeLog is shared by the clients of one world (all on the test
// goroutine; the mutex only keeps the race detector's view simple).
type wakeLog struct {
	mu    sync.Mutex
	owner map[string]int          // candidate node -> client that created it
	woken map[string]map[int]bool // deleted node -> clients (not its owner) its exists watch woke
	lists []int                   // children listings per client
}

func newWakeLog(n int) *wakeLog {
	return &wakeLog{owner: map[string]int{}, woken: map[string]map[int]bool{}, lists: make([]int, n)}
}

func (c *watcher) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	l := c.log
	switch r := req.(type) {
	case *task.GetChildrenRequest:
		l.mu.Lock()
		l.lists[c.client]++
		l.mu.Unlock()
	case *task.CreateRequest:
		inner := done
		done = func(resp task.Response) {
			if resp.Err == nil {
				l.mu.Lock()
				l.owner[resp.Path] = c.client
				l.mu.Unlock()
			}
			inner(resp)
		}
	case *task.ExistsRequest:
		if watch != nil {
			inner := watch
			path := r.Path
			watch = func(ev task.Event) {
				if ev.Type == task.EventNodeDeleted {
					l.mu.Lock()
					if o, ok := l.owner[path]; !ok || o != c.client {
						if l.woken[path] == nil {
							l.woken[path] = map[int]bool{}
						}
						l.woken[path][c.client] = true
					}
					l.mu.Unlock()
				}
				inner(ev)
			}
		}
	}
	c.Conn.Do(req, done, watch)
}

func newWorld(tb testing.TB, seed uint64, n int, cfg fakezk.Config) (*sim.World, *wakeLog) {
	tb.Helper()
	w, log, err := newLogged(seed, n, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Close)
	return w, log
}

// newLogged is newWorld for the caller to close.
func newLogged(seed uint64, n int, cfg fakezk.Config) (*sim.World, *wakeLog, error) {
	log := newWakeLog(n)
	w, err := sim.New(sim.Config{Seed: seed, Clients: n, Server: cfg,
		Wrap: func(i int, conn *fakezk.Conn) task.Conn { return &watcher{Conn: conn, client: i, log: log} }})
	return w, log, err
}

func mustRun[T any](tb testing.TB, w *sim.World, i int, t task.Task[T]) (T, error) {
	tb.Helper()
	v, err := sim.Run(w, i, t)
	if err == sim.ErrStuck {
		tb.Fatalf("task on client %d never ended", i)
	}
	return v, err
}

func mustElection(tb testing.TB, dir string, cfg election.Config) *election.Election {
	tb.Helper()
	e, err := election.New(dir, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func noReportedErrors(tb testing.TB, w *sim.World) {
	tb.Helper()
	for _, err := range w.Errs {
		tb.Errorf("detached flow failed: %v", err)
	}
}

package election_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"

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
	mu sync.Mutex
	// deleted node (its path and czxid: a name comes again once the
	// directory's counter restarts) -> clients (not its owner) its
	// exists watch woke
	woken map[string]map[int]bool
	lists []int // children listings per client

	srv   *fakezk.Server
	rng   *rand.Rand
	dropP float64
	// multisOf, if not nil, names the clients whose multis that create
	// an ephemeral node (a Master's campaign) also lose their connection
	// right after they are sent, with the same probability.
	multisOf map[int]bool
}

// wokenAt returns the clients the deletion of the node at path woke,
// whatever its incarnation.
func (l *wakeLog) wokenAt(path string) map[int]bool {
	out := map[int]bool{}
	for key, woken := range l.woken {
		if strings.HasPrefix(key, path+"@") {
			for i := range woken {
				out[i] = true
			}
		}
	}
	return out
}

func newWakeLog(n int) *wakeLog {
	return &wakeLog{woken: map[string]map[int]bool{}, lists: make([]int, n)}
}

func (c *watcher) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	l := c.log
	switch r := req.(type) {
	case *task.GetChildrenRequest:
		l.mu.Lock()
		l.lists[c.client]++
		l.mu.Unlock()
	case *task.ExistsRequest:
		if watch != nil {
			// A watch on a node of our own session (a leader following its
			// own node) is not a waiter's.
			self := false
			innerDone, innerWatch := done, watch
			path := r.Path
			done = func(resp task.Response) {
				self = resp.Err == nil && resp.Stat.EphemeralOwner != 0 && resp.Stat.EphemeralOwner == c.Conn.SessionID()
				if resp.Err == nil {
					path = fmt.Sprintf("%s@%d", r.Path, resp.Stat.Czxid)
				}
				innerDone(resp)
			}
			watch = func(ev task.Event) {
				if ev.Type == task.EventNodeDeleted && !self {
					l.mu.Lock()
					if l.woken[path] == nil {
						l.woken[path] = map[int]bool{}
					}
					l.woken[path][c.client] = true
					l.mu.Unlock()
				}
				innerWatch(ev)
			}
		}
	}
	c.Conn.Do(req, done, watch)
	if l.srv != nil && (isEphemeralCreate(req) || l.multisOf[c.client] && isEphemeralMulti(req)) && l.rng.Float64() < l.dropP {
		l.srv.Drop(c.Conn, l.rng.IntN(2) == 0)
	}
}

func isEphemeralCreate(req task.Request) bool {
	cr, ok := req.(*task.CreateRequest)
	return ok && cr.Mode.IsEphemeral()
}

func isEphemeralMulti(req task.Request) bool {
	if mr, ok := req.(*task.MultiRequest); ok {
		for _, op := range mr.Ops {
			if cr, ok := op.(*task.CreateRequest); ok && cr.Mode.IsEphemeral() {
				return true
			}
		}
	}
	return false
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

func mustElection(tb testing.TB, dir string, opts ...election.Option) *election.Election {
	tb.Helper()
	e, err := election.New(dir, opts...)
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

// addTwin adds a client whose executor has the same seed as client i's,
// so it draws the same random numbers (candidate names among them).
func addTwin(w *sim.World, log *wakeLog, i int) error {
	k := len(w.Execs)
	conn := w.Server.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second, Root: w.Root()})
	log.lists = append(log.lists, 0)
	ex, err := executor.New(executor.Config{Conn: &watcher{Conn: conn, client: k, log: log}, Clock: w.Clock,
		Seed:    w.Seed*31 + uint64(i) + 1,
		OnError: func(err error) { w.Errs = append(w.Errs, &sim.ClientError{Client: k, Err: err}) }})
	if err != nil {
		return err
	}
	w.Conns = append(w.Conns, conn)
	w.Execs = append(w.Execs, ex)
	w.Drive()
	return nil
}

// dropCreates makes every client lose the reply of a create of an
// ephemeral node with probability p, the create applied or not (drawn).
func (l *wakeLog) dropCreates(srv *fakezk.Server, rng *rand.Rand, p float64) {
	l.srv, l.rng, l.dropP = srv, rng, p
}

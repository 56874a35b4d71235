package semaphore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// dropper is a Conn that, when armed, drops its connection right after
// it sends the next request of a kind under a path prefix (the request
// applied or not), so that request's reply is lost.
type dropper struct {
	*fakezk.Conn
	w       *sim.World
	create  bool   // drop after a create (else after a delete)
	under   string // of a node whose path begins so
	applied bool
	armed   bool
	fired   int
}

func (d *dropper) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	d.Conn.Do(req, done, watch)
	if !d.armed || !strings.HasPrefix(req.NodePath(), d.under) {
		return
	}
	_, isCreate := req.(*task.CreateRequest)
	_, isDelete := req.(*task.DeleteRequest)
	if (d.create && isCreate) || (!d.create && isDelete) {
		d.armed = false
		d.fired++
		d.w.Server.Drop(d.Conn, d.applied)
	}
}

// newWorld is a sim.World of n clients whose connections can drop a
// reply (drops[i] is client i's); it is closed when the test ends.
func newWorld(t testing.TB, seed uint64, n int) (*sim.World, []*dropper) {
	t.Helper()
	drops := make([]*dropper, n)
	w, err := sim.New(sim.Config{Seed: seed, Clients: n,
		Wrap: func(i int, conn *fakezk.Conn) task.Conn {
			drops[i] = &dropper{Conn: conn}
			return drops[i]
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drops {
		d.w = w
	}
	t.Cleanup(w.Close)
	return w, drops
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

func mustSem(t testing.TB, path string, n int) *semaphore.Semaphore {
	t.Helper()
	m, err := semaphore.New(path, n)
	if err != nil {
		t.Fatal(err)
	}
	return m
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

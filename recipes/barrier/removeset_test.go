package barrier_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// deleteHolder holds the first delete of path, unsent, until release:
// its reply has not come.
type deleteHolder struct {
	*fakezk.Conn
	path string
	once sync.Once
	held chan struct{} // closed once the delete is held
	send func()        // sends it on; executor goroutine only
}

func (c *deleteHolder) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if r, ok := req.(*task.DeleteRequest); ok && r.Path == c.path {
		holding := false
		c.once.Do(func() {
			holding = true
			c.send = func() { c.Conn.Do(req, done, watch) }
			close(c.held)
		})
		if holding {
			return
		}
	}
	c.Conn.Do(req, done, watch)
}

// A Remove whose ctx has ended goes on in the background: here its
// delete's reply has not come. A Set on the same Client waits for it,
// within its own ctx: otherwise the Set would find the barrier up and
// return, and the Remove's delete lift it after the Set has returned,
// with nobody having removed it since.
func TestSetWaitsForOwnRemove(t *testing.T) {
	const path = "/app/gate"
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := &deleteHolder{Conn: srv.Connect(fakezk.ConnConfig{}), path: path, held: make(chan struct{})}
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a failure bound
	defer cancel()

	g, _ := barrier.NewClient(ex, path)
	if err := g.Set(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(ctx)
	end()
	if err := g.Remove(ended); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Remove with an ended context = %v", err)
	}
	select {
	case <-conn.held:
	case <-ctx.Done():
		t.Fatal("the delete was never sent")
	}

	// The Remove is under way (its delete held): a Set waits for it
	// until its ctx ends.
	ctx2, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	err = g.Set(ctx2, nil)
	cancel2()
	if !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Errorf("Set while the Remove is under way = %v, want task.ErrDeadlineExceeded", err)
	}

	// Once the Remove is over, Set raises the barrier, and it stays up.
	set := make(chan error, 1)
	go func() { set <- g.Set(ctx, nil) }()
	if _, err := executor.Await(ctx, ex, task.Func(func(*task.Scope) (task.Unit, error) {
		conn.send()
		return task.Unit{}, nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := <-set; err != nil {
		t.Fatalf("Set after the Remove: %v", err)
	}
	if _, err := executor.Await(ctx, ex, task.Sync(path)); err != nil { // every reply of the session so far is in
		t.Fatal(err)
	}
	if _, up := srv.NodeStat(path); !up {
		t.Fatal("the barrier is down after Set returned: the earlier Remove lifted it")
	}
	if err := g.Remove(ctx); err != nil {
		t.Fatal(err)
	}
}

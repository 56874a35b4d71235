package seqid_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// Client doc and PROTOCOL.md (goroutines): a reservation's "failure goes
// to the caller that started it, or, once that caller has left, to the
// executor's Config.OnError". The reservation's end stored its failure
// and read whether its caller had left under the Client's mutex, then
// let the mutex go and only then closed the channel its callers wait on.
// A caller whose ctx ended in that gap took the mutex, found the channel
// still open, marked itself gone and returned its ctx's end: the
// reservation, which had read "not left", reported nothing, and the
// failure was told to nobody. A race between goroutines, not a schedule
// of the world (a simulation's actors never run inside an executor's
// job), so this test tries it many times on a running executor: each
// first call's context is canceled at a varying moment while its
// reservation fails (the node refuses writes), and every failed
// reservation of a first call must have been returned or reported. On
// the code before the fix it failed within a few thousand tries in most
// runs (not every run: it is a race).
func TestClientLeftFillFailureNeverDropped(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	var reported atomic.Int64
	conn := &countSets{Conn: srv.Connect(fakezk.ConnConfig{})}
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1, OnError: func(err error) {
		if errors.Is(err, task.ErrNoAuth) {
			reported.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(rctx) }()
	defer func() { rcancel(); <-done }()
	if _, err := executor.Await(context.Background(), ex, task.Create(path, seqid.Encode(0), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if err := srv.AdminSetACL(path, []task.ACL{{Perms: task.PermAll &^ task.PermWrite, Scheme: "world", ID: "anyone"}}); err != nil {
		t.Fatal(err)
	}
	tries := 50000
	if testing.Short() {
		tries = 5000
	}
	returned := int64(0) // first calls that returned their reservation's failure
	for i := range tries {
		g, err := seqid.NewClient(ex, path, 10)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for range i % 64 {
				runtime.Gosched()
			}
			cancel()
		}()
		if _, err := g.Next(ctx); errors.Is(err, task.ErrNoAuth) {
			returned++
		} else if !errors.Is(err, task.ErrCanceled) {
			t.Fatalf("try %d: first call: %v", i, err)
		}
		// The second call waits for the first call's reservation, if
		// any, then fails with its own (one set each): by then the first
		// one's end, report included, has run.
		if _, err := g.Next(context.Background()); !errors.Is(err, task.ErrNoAuth) {
			t.Fatalf("try %d: second call: %v", i, err)
		}
		failed := conn.sets.Load() - int64(i+1) // each reservation sends one set, refused
		if r := reported.Load(); returned+r != failed {
			t.Fatalf("try %d: %d reservations of first calls failed, %d failures returned, %d reported: %d told to nobody",
				i, failed, returned, r, failed-returned-r)
		}
	}
}

// countSets counts the set requests sent through it.
type countSets struct {
	*fakezk.Conn
	sets atomic.Int64
}

func (c *countSets) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if _, ok := req.(*task.SetDataRequest); ok {
		c.sets.Add(1)
	}
	c.Conn.Do(req, done, watch)
}

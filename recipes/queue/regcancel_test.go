package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// Client: "Each Client is one consumer (in at-least-once mode, one
// registration per session)". The first Take of an at-least-once Client
// on a fresh session registers: its marker's create is held; a second
// Take of the Client waits for that registration. The first Take is
// canceled: the second, woken, registers a consumer of its own, while the
// first's create lands after all. The session had two markers, one of
// them no consumer's, kept until the session ends (one more per
// registration cut so: a Client whose Takes keep ending during the
// registration gathers them). The create now runs as a flow of its own,
// and a take that ended first deletes the marker it made. Fails on the
// code before the fix.
func TestRegistrationOfACanceledTake(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	sc := &slotConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a := runClient(t, srv, sc, queue.WithMode(queue.AtLeastOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	// b makes the markers' directory.
	if _, err := b.Put(bg, []byte("w")); err != nil {
		t.Fatal(err)
	}
	if w, err := b.Take(bg); err != nil || b.Ack(bg, w) != nil {
		t.Fatal(err)
	}
	reg := sc.arm(isMarkerCreate)
	ctx1, cancel1 := context.WithCancel(bg)
	first := make(chan error, 1)
	go func() { _, err := a.Take(ctx1); first <- err }()
	<-reg.held
	sub := submitted{once: new(sync.Once), ch: make(chan struct{})}
	second := make(chan *queue.Item, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		it, err := a.Take(park.NewContext(bg, sub))
		if err != nil {
			t.Error(err)
		}
		second <- it
	}()
	<-sub.ch
	if _, err := executor.Await(bg, a.Executor(), task.Value(task.Unit{})); err != nil {
		t.Fatal(err)
	}
	secondReg := sc.arm(isMarkerCreate)
	cancel1()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("first take: %v", err)
	}
	// The first's marker create lands (applied, its reply to a take
	// that has ended), then the second take's registration.
	<-secondReg.held
	applied := make(chan struct{})
	sc.Conn.Do(reg.req, func(r task.Response) { reg.done(r); close(applied) }, reg.watch)
	<-applied
	sc.release(secondReg)
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	it := <-second
	if err := a.Ack(bg, it); err != nil {
		t.Fatal(err)
	}
	if m, _ := srv.Children("/q.consumers"); len(m) != 2 {
		t.Fatalf("markers %v: a's session has %d, want one registration per session (and b's)", m, len(m)-1)
	}
}

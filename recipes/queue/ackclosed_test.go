package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// isAckMulti matches an ack's multi: the marker's check and the delete
// of an in-flight copy.
func isAckMulti(req task.Request) bool {
	m, ok := req.(*task.MultiRequest)
	if !ok || len(m.Ops) != 2 {
		return false
	}
	d, ok := m.Ops[1].(*task.DeleteRequest)
	return ok && strings.HasPrefix(d.Path, "/q.inflight/")
}

// Item.Ack's doc said: "task.ErrClosed: the executor was closed before
// the ack's outcome came back ... Not applied, the item goes back to the
// queue". An Ack whose multi is applied, its reply held, and the executor
// closed then: the Ack's error matches task.ErrClosed, and the ack was
// applied (the copy is gone, the item will never come back). The code
// was right, the doc wrong: the error is ErrOutcomeUnknown (wrapping
// task.ErrClosed), which the doc now says; ErrClosed alone is an ack
// refused before it was sent.
func TestAckClosedWithItsMultiSentIsOutcomeUnknown(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	lr := &lostReply{Conn: conn, match: isAckMulti, replied: make(chan struct{})}
	a, ex, _ := reportingClient(t, srv, lr, queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	if _, err := a.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := a.Take(bg)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- a.Ack(bg, it) }()
	<-lr.replied // applied, the reply held
	ex.Close()
	err = <-errc
	if left := children(srv, "/q.inflight"); len(left) != 0 {
		t.Fatalf("the ack's multi was not applied: in flight %v", left)
	}
	if !errors.Is(err, queue.ErrOutcomeUnknown) || errors.Is(err, queue.ErrDeliveryLost) {
		t.Fatalf("an Ack applied, its reply lost as the executor closed: %v; want ErrOutcomeUnknown (it may have been applied)", err)
	}
	// Refused before it is sent: ErrClosed alone, not applied.
	if err := a.Ack(bg, it); !errors.Is(err, task.ErrClosed) || errors.Is(err, queue.ErrOutcomeUnknown) {
		t.Fatalf("an Ack after the close: %v, want task.ErrClosed alone", err)
	}
}

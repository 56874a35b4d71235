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

// giveback.go, giveBackOwn: "A copy found gone was given back already (a
// lost reply)", and the ConnectionLoss branch of giveBackTask: "applied
// before: the copy is gone and this fails". At least once, a take is
// canceled with its move in flight; the move is applied and the
// give-back's multi is applied with its reply lost. The give-back is sent
// again: its create of the item (op 2) fails with NodeExists before the
// copy's delete (op 3) is reached, a case giveBackTask did not expect,
// and the executor's Config.OnError was told that giving the item back
// failed although it is back in the queue.
func TestGiveBackSentAgainAfterALostReplyIsNoFailure(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	isGiveBack := func(req task.Request) bool {
		if m, ok := req.(*task.MultiRequest); ok {
			for _, op := range m.Ops {
				if cr, ok := op.(*task.CreateRequest); ok && strings.HasPrefix(cr.Path, "/q/") {
					return true
				}
			}
		}
		return false
	}
	lr := &lostReply{Conn: hc, match: isGiveBack, replied: make(chan struct{})}
	a, _, reports := reportingClient(t, srv, lr, queue.WithMode(queue.AtLeastOnce))
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg := context.Background()
	if _, err := b.Put(bg, []byte("x")); err != nil {
		t.Fatal(err)
	}
	held := hc.arm(isItemDelete) // the move (its multi deletes /q/<item>)
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() { _, err := a.Take(ctx); errc <- err }()
	<-held
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("take canceled in flight: %v", err)
	}
	hc.release() // the move: applied; the give-back follows
	<-lr.replied // the give-back: applied, its reply held
	lr.drop()    // ... and lost
	sctx, scancel := context.WithTimeout(bg, settleBound)
	defer scancel()
	if err := a.Settle(sctx); err != nil {
		t.Fatal(err)
	}
	if got := dataOf(t, srv); !got["x"] {
		t.Fatalf("x not back in the queue: %v", got)
	}
	if r := reports(); len(r) > 0 {
		t.Fatalf("x is back in the queue (given back by the send whose reply was lost), yet OnError was told: %v", r)
	}
}

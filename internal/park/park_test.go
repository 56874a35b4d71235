package park_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/internal/park"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Outside a simulation Wait returns at once, whatever ready says, and Go
// starts a plain goroutine with the same context.
func TestOutsideASimulation(t *testing.T) {
	ctx := context.Background()
	park.Wait(ctx, func() bool { t.Error("ready called outside a simulation"); return false })
	done := make(chan context.Context)
	park.Go(ctx, func(c context.Context) { done <- c })
	if c := <-done; c != ctx {
		t.Fatal("Go gave another context")
	}
}

// A context carrying a Parker has its Wait and Go called.
func TestParkerCalled(t *testing.T) {
	p := &recorder{}
	ctx := park.NewContext(context.Background(), p)
	park.Wait(ctx, func() bool { return true })
	park.Go(ctx, func(c context.Context) {
		if park.From(c) != p {
			t.Error("the goroutine's context does not carry its Parker")
		}
	})
	if p.waits != 1 || p.gos != 1 {
		t.Fatalf("waits %d, gos %d", p.waits, p.gos)
	}
	if park.From(context.Background()) != nil {
		t.Fatal("a Parker found in a context without one")
	}
}

func TestClosed(t *testing.T) {
	ch := make(chan struct{})
	if park.Closed(ch) {
		t.Fatal("open channel reported closed")
	}
	close(ch)
	if !park.Closed(ch) {
		t.Fatal("closed channel reported open")
	}
}

type recorder struct{ waits, gos int }

func (r *recorder) Wait(ready func() bool) {
	r.waits++
	if !ready() {
		panic("not ready")
	}
}

func (r *recorder) Go(f func(park.Parker)) { r.gos++; f(r) }

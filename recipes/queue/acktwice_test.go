package queue_test

import (
	"context"
	"testing"

	comb "github.com/zkflow/zkflow/combinators"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// A second Ack of an Item whose ack was applied says what is known: it
// was applied (nil), not ErrDeliveryLost; it sends nothing, and the
// consumer stays registered (its next take and ack go on under the same
// marker). Two Acks of one Item started together both succeed too.
func TestAckTwice(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	c := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	bg, cancel := context.WithTimeout(context.Background(), failAfter)
	defer cancel()
	for range 3 {
		if _, err := c.Put(bg, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	it, err := c.Take(bg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(bg, it); err != nil {
		t.Fatalf("first ack: %v", err)
	}
	if err := c.Ack(bg, it); err != nil {
		t.Fatalf("second ack of an acked item: %v, want nil (the first was applied)", err)
	}
	it2, err := c.Take(bg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(bg, it2); err != nil {
		t.Fatalf("the next item's ack: %v", err)
	}
	markers, err := executor.Await(bg, c.Executor(), task.Children("/q.consumers"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(markers.Names); n != 1 {
		t.Fatalf("%d consumer markers after a second ack, want 1 (the consumer registered again)", n)
	}

	// Two Acks at once, both sent before either reply: the one that finds
	// the copy gone hears of the other's success.
	it3, err := c.Take(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(bg, c.Executor(), comb.All(it3.Ack(), it3.Ack())); err != nil {
		t.Fatalf("two acks of one item at once: %v", err)
	}
}

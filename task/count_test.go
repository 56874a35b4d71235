package task_test

import (
	"testing"

	"github.com/zkflow/zkflow/executor"
)

// Descendants counts every scope under a scope, at any depth, until it is
// closed; canceling alone does not take a scope out of the count.
func TestDescendants(t *testing.T) {
	ex, _ := executor.New(executor.Config{})
	defer ex.Shutdown()
	root := ex.SessionScope()
	base := root.Descendants()
	a := root.Child()
	b := a.Child()
	c := b.WithDeadline(ex.Clock().Now().Add(1))
	d := root.Child()
	if got := root.Descendants() - base; got != 4 {
		t.Fatalf("after 4 children: %d", got)
	}
	if got := a.Descendants(); got != 2 {
		t.Fatalf("a has %d descendants, want 2", got)
	}
	d.Cancel(nil)
	if got := root.Descendants() - base; got != 4 {
		t.Fatalf("a canceled scope stops counting before it is closed: %d", got)
	}
	d.Close()
	c.Close()
	if got := root.Descendants() - base; got != 2 {
		t.Fatalf("after closing 2: %d", got)
	}
	a.Close() // b is canceled with a but stays linked under it
	if got := root.Descendants() - base; got != 0 {
		t.Fatalf("after closing a: %d", got)
	}
}

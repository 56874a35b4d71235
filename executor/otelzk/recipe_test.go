package otelzk_test

import (
	"math"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// What recipes report through the Observer: a lock held for two seconds
// of the executor's clock and released, a leadership held for three and
// resigned, a lock lost to an expiry, become the lock's wait and hold histograms and the
// leadership's changes and duration, by outcome.
func TestRecipeMetrics(t *testing.T) {
	r := newRig(t)
	l, err := lock.New("/app/lock")
	if err != nil {
		t.Fatal(err)
	}
	e, err := election.New("/app/election")
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	done := func(_ task.Unit, err error) { errs = append(errs, err) }
	executor.Submit(r.ex, c.Then(l.Acquire(), func(h *lock.Held) task.Task[task.Unit] {
		return c.Seq(c.Sleep(2*time.Second), h.Release())
	}), done)
	r.drive()
	executor.Submit(r.ex, c.Then(e.Campaign(), func(ld *election.Leadership) task.Task[task.Unit] {
		return c.Seq(c.Sleep(3*time.Second), ld.Resign())
	}), done)
	r.drive()
	if len(errs) != 2 || errs[0] != nil || errs[1] != nil {
		t.Fatalf("flows: %v", errs)
	}
	// A hold lost to the session's expiry.
	var held *lock.Held
	executor.Submit(r.ex, l.Acquire(), func(h *lock.Held, err error) { held, errs = h, append(errs, err) })
	r.drive()
	r.srv.Expire(r.conn)
	r.drive()
	if held == nil || held.Err() == nil {
		t.Fatalf("the second hold: %v, %v", held, errs)
	}
	ms := r.collect(t)
	if got := histogram(t, ms["zkflow.lock.wait.duration"]); got["[]"][0] != 2 {
		t.Errorf("lock waits: %v, want two", got)
	}
	if lost := histogram(t, ms["zkflow.lock.hold.duration"])["[zkflow.outcome=lost]"]; lost[0] != 1 {
		t.Errorf("lock holds lost: %v, want one", lost)
	}
	hold := histogram(t, ms["zkflow.lock.hold.duration"])["[zkflow.outcome=released]"]
	if hold[0] != 1 || math.Abs(hold[1]-2) > 0.01 {
		t.Errorf("lock holds released: %v, want one of 2s", hold)
	}
	changes := sums(t, ms["zkflow.leadership.changes"])
	if changes["[zkflow.outcome=elected]"] != 1 || changes["[zkflow.outcome=resigned]"] != 1 {
		t.Errorf("leadership changes: %v, want one elected, one resigned", changes)
	}
	term := histogram(t, ms["zkflow.leadership.duration"])["[zkflow.outcome=resigned]"]
	if term[0] != 1 || math.Abs(term[1]-3) > 0.01 {
		t.Errorf("leadership durations: %v, want one of 3s", term)
	}
}

package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// LeadOptions.Backoff: a transient failure is campaigned again after a
// wait on the clock. A Backoff given Max alone (Initial 0) waits nothing,
// Backoff.Delay's 0: a campaign that fails at once, again and again, would
// spin. Lead refuses such a Backoff, and one Validate refuses, with
// task.ErrInvalidArgument before it campaigns (nothing sent).
func TestLeadRefusesABackoffThatWouldSpin(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	cl, err := election.NewClient(ex, "/e")
	if err != nil {
		t.Fatal(err)
	}
	lead := func(context.Context, *election.Leadership) error { return nil }
	// A context already ended: the refusal comes before anything looks at
	// it (a Lead that went on to campaign returns task.ErrCanceled).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, b := range []combinators.Backoff{
		{Max: time.Second},
		{Initial: -time.Millisecond},
		{Initial: time.Millisecond, Jitter: 2},
		{Initial: time.Millisecond, Max: -1},
	} {
		err := cl.Lead(ctx, election.LeadOptions{Backoff: b}, lead)
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("Lead with Backoff %+v = %v, want task.ErrInvalidArgument", b, err)
		}
	}
	if srv.Zxid() != 0 {
		t.Errorf("a refused Lead wrote to the server (zxid %d)", srv.Zxid())
	}
}

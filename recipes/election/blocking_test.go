package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
)

// The blocking Campaign: a context that ended already submits nothing; a
// campaign whose context ends while it waits leaves no node behind, so
// after the leader steps down a newcomer leads without waiting for it.
func TestBlockingCampaignContext(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	exs, stop := clients(srv, 3)
	defer stop()
	ctx := context.Background()
	e := mustElection(t, "/app/e", election.Config{})

	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := election.Campaign(ended, exs[0], e); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended context: %v", err)
	}
	la, err := election.Campaign(ctx, exs[0], e)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := election.Campaign(short, exs[1], e); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("campaign past its context: %v", err)
	}
	if err := la.StepDown(ctx); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lc, err := election.Campaign(wait, exs[2], e)
	if err != nil {
		t.Fatalf("newcomer after the step down: %v (an orphan node of the canceled campaign?)", err)
	}
	if who, err := election.Leader(ctx, exs[0], e); err != nil || len(who) != 0 {
		t.Fatalf("Leader = %q, %v", who, err)
	}
	if err := lc.StepDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lc.StepDown(ctx); err != nil {
		t.Fatalf("second StepDown: %v", err)
	}
}

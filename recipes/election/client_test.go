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
	e := mustElection(t, "/app/e")

	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := election.ClientOf(exs[0], e).Campaign(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended context: %v", err)
	}
	la, err := election.ClientOf(exs[0], e).Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := election.ClientOf(exs[1], e).Campaign(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("campaign past its context: %v", err)
	}
	if err := election.ClientOf(exs[0], nil).Resign(ctx, la); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lc, err := election.ClientOf(exs[2], e).Campaign(wait)
	if err != nil {
		t.Fatalf("newcomer after the step down: %v (an orphan node of the canceled campaign?)", err)
	}
	if who, err := election.ClientOf(exs[0], e).Leader(ctx); err != nil || len(who) != 0 {
		t.Fatalf("Leader = %q, %v", who, err)
	}
	if err := election.ClientOf(exs[2], nil).Resign(ctx, lc); err != nil {
		t.Fatal(err)
	}
	if err := election.ClientOf(exs[2], nil).Resign(ctx, lc); err != nil {
		t.Fatalf("second Resign: %v", err)
	}
}

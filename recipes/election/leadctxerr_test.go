package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// A lead function that returns its own context's error once the
// leadership is lost (`<-ctx.Done(); return ctx.Err()`, the usual shape of
// a function that works until told to stop) has not failed: the
// leadership ended under it. With Requeue, Lead campaigns again, as after
// a nil; it used to return context.Canceled, as if Lead's own ctx had
// ended, and the candidate stopped campaigning.
func TestLeadRequeuesAfterLeadReturnsItsContextsError(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(context.Background()) }()
	defer func() { ex.Close(); <-done }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	e := mustElection(t, "/app/lead")
	second := errors.New("second leadership's error")
	rounds := 0
	err = election.ClientOf(ex, e).Lead(ctx, election.LeadOptions{Requeue: true}, func(lctx context.Context, l *election.Leadership) error {
		rounds++
		if rounds == 1 {
			srv.Expire(conn)
			<-lctx.Done()
			return lctx.Err()
		}
		return second
	})
	if !errors.Is(err, second) || rounds != 2 {
		t.Fatalf("Lead with Requeue = %v after %d rounds; want the second round's error after 2 (the first ended with the leadership)", err, rounds)
	}

	// Without Requeue, the same function ends Lead with nil: one
	// leadership, ended.
	rounds = 0
	err = election.ClientOf(ex, e).Lead(ctx, election.LeadOptions{}, func(lctx context.Context, l *election.Leadership) error {
		rounds++
		srv.Expire(conn)
		<-lctx.Done()
		return lctx.Err()
	})
	if err != nil || rounds != 1 {
		t.Fatalf("Lead without Requeue = %v after %d rounds; want nil after 1", err, rounds)
	}

	// Lead's own ctx ending is still reported as such.
	cctx, ccancel := context.WithCancel(ctx)
	err = election.ClientOf(ex, e).Lead(cctx, election.LeadOptions{Requeue: true}, func(lctx context.Context, l *election.Leadership) error {
		ccancel()
		<-lctx.Done()
		return lctx.Err()
	})
	if !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Lead whose ctx ended = %v, want task.ErrCanceled", err)
	}
}

package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
)

// A lead function that panics, in a process that recovers (a server's
// recovery middleware, a supervisor): the panic goes on up to Lead's
// caller, and the leadership is given up on the way, as when lead
// returns. Before, the candidate node stayed until the session ended:
// Lead's caller no longer led, and every other candidate waited behind
// a leadership nobody held, also after Lead's ctx had ended.
func TestLeadPanicGivesLeadershipUp(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	exs, stop := clients(srv, 2)
	defer stop()
	// A failure bound in real time, not an ordering.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e := mustElection(t, "/app/e")
	boom := errors.New("boom")
	var held *election.Leadership
	recovered := func() (p any) {
		defer func() { p = recover() }()
		_ = election.ClientOf(exs[0], e).Lead(ctx, election.LeadOptions{}, func(_ context.Context, l *election.Leadership) error {
			held = l
			panic(boom)
		})
		return nil
	}()
	if recovered != boom {
		t.Fatalf("Lead's caller recovered %v, want lead's panic", recovered)
	}
	select {
	case <-held.Done():
	case <-ctx.Done():
		t.Fatal("the leadership of a lead that panicked was not given up")
	}
	if !errors.Is(held.Err(), election.ErrResigned) {
		t.Fatalf("Err = %v, want ErrResigned", held.Err())
	}
	wait, cancelWait := context.WithTimeout(ctx, 5*time.Second)
	defer cancelWait()
	l, err := election.ClientOf(exs[1], e).Campaign(wait)
	if err != nil {
		t.Fatalf("the next candidate after a lead that panicked: %v (its node left behind?)", err)
	}
	if err := election.ClientOf(exs[1], e).Resign(ctx, l); err != nil {
		t.Fatal(err)
	}
}

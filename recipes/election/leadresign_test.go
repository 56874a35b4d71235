package election_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// Lead's doc: it returns "lead's error when lead returns one (the
// leadership is given up first), the resign's error when the node could
// not be deleted (with ctx still live ...)"; the package doc: a resign
// that fails for good is heard by the caller or by Config.OnError.
//
// TestLeadReturnsAFailedResign's schedule, with lead returning an error
// of its own: the directory lets candidates create children but not
// delete them, so the resign after lead fails with ErrNoAuth (the node
// stays until the ACL lets the background resign delete it). Lead
// waited for that resign with ctx live, so Give handed its failure to
// Lead and not to OnError, and Lead returned lead's error alone: nobody
// heard of the failed resign. Lead's error must say both.
func TestLeadErrorAndAFailedResignBothTold(t *testing.T) {
	errLead := errors.New("lead failed")
	w, leadErr, held, _ := leadUndeletable(t, errLead)
	if _, there := w.NodeStat(held); !there {
		t.Fatalf("the node %s went: the resign did not fail", held)
	}
	if !errors.Is(leadErr, errLead) {
		t.Fatalf("Lead = %v, want lead's error", leadErr)
	}
	told := errors.Is(leadErr, task.ErrNoAuth)
	for _, err := range w.Errs {
		told = told || errors.Is(err, task.ErrNoAuth)
	}
	if !told {
		t.Errorf("the resign after lead failed with ErrNoAuth (node %s still there), yet Lead returned %v and OnError heard %v", held, leadErr, w.Errs)
	}
}

// leadUndeletable runs one Lead, whose lead returns ret, on client 0 of a
// world whose election directory lets candidates create children but not
// delete them (WithACL), so that the resign after lead fails with
// ErrNoAuth for good. It returns the world, Lead's error, the path of the
// node led with, and its Leadership.
func leadUndeletable(t *testing.T, ret error) (w *sim.World, leadErr error, held string, won *election.Leadership) {
	t.Helper()
	w, _ = newWorld(t, 1, 1, fakezk.Config{})
	const dir = "/svc/el"
	noDelete := []task.ACL{{Perms: task.PermAll &^ task.PermDelete, Scheme: "world", ID: "anyone"}}
	e := mustElection(t, dir, election.WithACL(func(p string) []task.ACL {
		if p == dir {
			return noDelete
		}
		return task.OpenACL
	}))
	c := election.ClientOf(w.Execs[0], e)
	returned := false
	w.Go(0, func(a *sim.Actor) {
		leadErr = c.Lead(a.Context(), election.LeadOptions{}, func(ctx context.Context, l *election.Leadership) error {
			held, won = l.Path(), l
			return ret
		})
		returned = true
	})
	if !w.Settle(func() bool { return returned }) {
		t.Fatal("Lead never returned")
	}
	w.Settle(func() bool { return false })
	if held == "" {
		t.Fatalf("never led: %v", leadErr)
	}
	return w, leadErr, held, won
}

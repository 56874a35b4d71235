package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
	"github.com/zkflow/zkflow/recipes/cache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checks are in every run's summary.
var checks = []string{"ok: every worker reported added", "w1 reported removed", "w2 reported re-created",
	"ok: every cached node is the server's node"}

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		extest.Run(t, run, []string{"-seed", seed}, append(checks, "ok: after the new session: w1 added and w3 removed")...)
	}
	extest.Run(t, run, []string{"-workers", "5"}, checks...)
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, extest.RealServer(t), checks...)
	if strings.Contains(s, "session expires") {
		t.Fatalf("fault injected on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-workers", "1"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}

// TestAwaitWaitsForTheReports: a cache's Current may hold a change no Next
// has reported yet (here w3's removal), so the wait must go on reading
// until a report shows the wanted snapshot, else the removal goes
// unreported (the failure seen once in CI on 67c8b24).
func TestAwaitWaitsForTheReports(t *testing.T) {
	node := func(name string) cache.Node { return cache.Node{Path: "/w/" + name} }
	nodes := func(names ...string) []cache.Node {
		var ns []cache.Node
		for _, n := range names {
			ns = append(ns, node(n))
		}
		return ns
	}
	reports := []cache.Change{
		{Nodes: nodes("w1", "w2", "w3", "w4", "w5"), Added: nodes("w1")},
		{Nodes: nodes("w1", "w2", "w4", "w5"), Removed: nodes("w3")},
	}
	next := func(context.Context) (cache.Change, error) {
		if len(reports) == 0 {
			return cache.Change{}, errors.New("no more reports")
		}
		ch := reports[0]
		reports = reports[1:]
		return ch, nil
	}
	added, removed, _, err := await(context.Background(), next, io.Discard, "w5", "w4", "w2", "w1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(added, []string{"w1"}) || !slices.Equal(removed, []string{"w3"}) || len(reports) != 0 {
		t.Fatalf("added %v, removed %v, %d reports unread; want [w1], [w3], 0", added, removed, len(reports))
	}
}

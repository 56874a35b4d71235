package partition_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// A refused delete of a Leave nobody waits for is told once. Member.Leave
// reports a failed delete to the executor's Config.OnError itself; the
// blocking face's give-back (Client.Leave with a ctx that has ended)
// reported the Leave's failure there again ("A failure of t is told
// once", recipes/internal/blocking): two reports of one refusal.
func TestLeaveRefusalReportedOnce(t *testing.T) {
	w := newWorld(t, 1, 1)
	cl, err := partition.NewClient(w.Execs[0], "/ro", []string{"a"}, partition.WithStable(stable))
	if err != nil {
		t.Fatal(err)
	}
	p := cl.Partitioner()
	m0 := join(t, w, p, 0)
	if !w.Settle(func() bool { return m0.State() == partition.Acquired && len(m0.Held()) == 1 }) {
		t.Fatalf("m0 %v holding %v", m0.State(), heldItems(m0))
	}
	noDelete := []task.ACL{{Perms: task.PermRead | task.PermCreate | task.PermAdmin, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL(w.ServerPath(p.ItemDir("a")), noDelete); err != nil {
		t.Fatal(err)
	}
	before := len(w.Errs)
	var lerr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		ctx, cancel := a.WithCancel(a.Context())
		cancel() // the caller's ctx has ended: the leave goes on in the background
		lerr = cl.Leave(ctx, m0)
		done = true
	})
	if !w.Settle(func() bool { return done && m0.Err() != nil }) {
		t.Fatalf("Client.Leave did not return (%v)", done)
	}
	if !errors.Is(lerr, task.ErrCanceled) {
		t.Fatalf("Client.Leave with an ended ctx = %v, want its ctx's end", lerr)
	}
	w.Settle(func() bool { return false }) // the background give-up ends, refused
	refusals := 0
	for _, err := range w.Errs[before:] {
		if errors.Is(err, task.ErrNoAuth) {
			refusals++
		}
	}
	if refusals != 1 {
		t.Fatalf("the refused delete reported %d times to OnError, want once: %v", refusals, w.Errs[before:])
	}
}

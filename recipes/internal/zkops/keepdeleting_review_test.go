package zkops_test

import (
	"errors"
	"strings"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// reviewWorld: one client whose requests are logged, /d and its own
// ephemeral /d/e, /d then made read only by the operator.
func reviewWorld(t *testing.T) (*sim.World, *sim.RequestLog) {
	t.Helper()
	var log *sim.RequestLog
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: func(_ int, cn *fakezk.Conn) task.Conn {
		log = &sim.RequestLog{Conn: cn}
		return log
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := sim.Run(w, 0, c.Seq(task.Create("/d", nil, task.Persistent), task.Create("/d/e", nil, task.Ephemeral))); err != nil {
		t.Fatal(err)
	}
	readOnly := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}
	if err := w.Server.AdminSetACL("/d", readOnly); err != nil {
		t.Fatal(err)
	}
	return w, log
}

func count(sent []string, what string) int {
	n := 0
	for _, s := range sent {
		if strings.HasPrefix(s, what) {
			n++
		}
	}
	return n
}

// KeepDeleting: "a flow of the session's own that deletes that
// incarnation again ... every task.RecheckAfter", deduplicated per node
// ("already being deleted again (a cleanup refused twice)"). A cleanup
// (StartCleanup) whose DeleteMine an ACL refuses starts KeepDeleting and,
// as it fails with the refusal, RetryRefused of the whole cleanup too:
// two background loops deleted the same node, each every period (fails
// on the code before the refusal KeepDeleting covers was marked).
func TestRefusedCleanupDeletesOncePerPeriod(t *testing.T) {
	w, log := reviewWorld(t)
	sim.Submit(w, 0, task.Func(func(s *task.Scope) (task.Unit, error) {
		zkops.StartCleanup(s, nil, zkops.DeleteMine("/d/e"))
		return task.Unit{}, nil
	}))
	w.Drive()
	log.Reset()
	period := task.RecheckAfter(w.Timeout())
	const periods = 10
	until := w.Clock.Now().Add(periods*period + period/2)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if _, _, ok := w.NodeData("/d/e"); !ok {
		t.Fatal("the node went while /d was read only")
	}
	// The first refused attempt's own read and delete may land after
	// the log's reset: one more.
	if n := count(log.Sent, "delete /d/e"); n > periods+1 {
		t.Fatalf("%d deletes of /d/e in %d periods of %s, want at most one per period:\n%s", n, periods, period, strings.Join(log.Sent, "\n"))
	}
	if len(w.Errs) != 1 || !errors.Is(w.Errs[0], task.ErrNoAuth) {
		t.Fatalf("reported %v, want the first refusal once", w.Errs)
	}
}

// KeepDeleting: "until the delete is applied, the node is gone or
// another, or the session ends". A refused DeleteMine, then the session
// expires: the next session sends no delete of the node (a node
// of the same name is made there meanwhile) and
// nothing is reported but the refusal.
func TestKeepDeletingStopsWithTheSession(t *testing.T) {
	w, log := reviewWorld(t)
	if _, err := sim.Run(w, 0, zkops.DeleteMine("/d/e")); !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("DeleteMine = %v, want ErrNoAuth", err)
	}
	w.Server.Expire(w.Conns[0])
	w.Settle(func() bool { _, _, ok := w.NodeData("/d/e"); return !ok })
	if err := w.Server.AdminSetACL("/d", task.OpenACL); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate("/d/e", nil, 0); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	until := w.Clock.Now().Add(10 * task.RecheckAfter(w.Timeout()))
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if n := count(log.Sent, "delete /d/e"); n != 0 {
		t.Fatalf("%d deletes of /d/e after the session ended: %v", n, log.Sent)
	}
	if _, st, ok := w.NodeData("/d/e"); !ok || st.EphemeralOwner != 0 {
		t.Fatal("the node made again at /d/e went")
	}
	for _, err := range w.Errs {
		t.Errorf("reported: %v", err)
	}
}

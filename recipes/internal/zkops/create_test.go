package zkops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

func sessionID(t *testing.T, w *sim.World) int64 {
	t.Helper()
	id, err := sim.Run(w, 0, task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { k(s.Session().ID, nil) }))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func req(prefix string) *task.CreateRequest {
	return &task.CreateRequest{Path: "/u/v/" + prefix, Mode: task.EphemeralSequential}
}

// A missing directory is created; the name returned is the node's.
func TestCreateUnique(t *testing.T) {
	w := world(t, 1, nil)
	name, err := sim.Run(w, 0, zkops.CreateUnique(req("_c_a-latch-"), "/u/v", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Children("/u/v"); len(got) != 1 || got[0] != name || !strings.HasPrefix(name, "_c_a-latch-") {
		t.Errorf("name %q, children %v", name, got)
	}
	_, err = sim.Run(w, 0, zkops.CreateUnique(&task.CreateRequest{Path: "bad", Mode: task.EphemeralSequential}, "/u", nil, nil))
	if !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("CreateUnique(bad) = %v, want ErrInvalidPath", err)
	}
}

// A lost create reply, applied or not: with a settle, exactly one node and
// its name; without one (a blind retry), an applied create leaves an orphan.
func TestCreateUniqueLostReply(t *testing.T) {
	for _, blind := range []bool{false, true} {
		for _, applied := range []bool{false, true} {
			d := &dropper{applied: applied, match: isCreate, dropped: 1}
			w := world(t, 1, d)
			if _, err := sim.Run(w, 0, zkops.EnsurePath("/u/v", nil)); err != nil {
				t.Fatal(err)
			}
			id := sessionID(t, w)
			settled := 0
			settle := func() task.Task[[]string] {
				settled++
				if blind {
					return nil
				}
				return task.Task[[]string](func(s *task.Scope, k task.Cont[[]string]) {
					task.Run(s, zkops.Owned("/u/v", "_c_a-", id), func(m []zkops.Match, err error) { k(zkops.Names(m), err) })
				})
			}
			d.dropped = 0
			name, err := sim.Run(w, 0, zkops.CreateUnique(req("_c_a-latch-"), "/u/v", nil, settle))
			if err != nil {
				t.Fatalf("blind=%v applied=%v: %v", blind, applied, err)
			}
			got := w.Children("/u/v")
			want := 1
			if blind && applied {
				want = 2
			}
			if d.dropped != 1 || settled != 1 || len(got) != want || got[len(got)-1] != name {
				t.Errorf("blind=%v applied=%v: dropped %d, settled %d, name %q, children %v (want %d)",
					blind, applied, d.dropped, settled, name, got, want)
			}
		}
	}
}

// An error of the settle ends the task with it.
func TestCreateUniqueSettleError(t *testing.T) {
	d := &dropper{applied: true, match: isCreate, dropped: 1}
	w := world(t, 1, d)
	if _, err := sim.Run(w, 0, zkops.EnsurePath("/u/v", nil)); err != nil {
		t.Fatal(err)
	}
	d.dropped = 0
	boom := errors.New("boom")
	_, err := sim.Run(w, 0, zkops.CreateUnique(req("_c_a-"), "/u/v", nil, func() task.Task[[]string] { return task.Fail[[]string](boom) }))
	if !errors.Is(err, boom) {
		t.Errorf("CreateUnique = %v, want the settle's error", err)
	}
}

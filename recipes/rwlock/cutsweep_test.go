package rwlock_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// Every write a read or write acquire and release sends, cut off with its reply lost (applied), the
// session back through a member that has not applied it, the call's
// deadline passing meanwhile: the session leaves no node of its own
// behind, and another client then acquires (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	sim.RunSweeps(t, cutSweeps(t))
}

func cutSweeps(t *testing.T) map[string]sim.CutSweep {
	l, err := rwlock.New("/rw")
	if err != nil {
		t.Fatal(err)
	}
	give := func(h *rwlock.Held) task.Task[task.Unit] { return h.Release() }
	out := map[string]sim.CutSweep{}
	for name, take := range map[string]func(int) task.Task[*rwlock.Held]{
		"write": func(int) task.Task[*rwlock.Held] { return l.Acquire() },
		"read behind write": func(i int) task.Task[*rwlock.Held] {
			if i == 0 {
				return l.AcquireRead()
			}
			return l.Acquire()
		},
		"write behind read": func(i int) task.Task[*rwlock.Held] {
			if i == 0 {
				return l.Acquire()
			}
			return l.AcquireRead()
		},
		"try write": func(int) task.Task[*rwlock.Held] { return l.TryAcquire() },
		"try read":  func(int) task.Task[*rwlock.Held] { return l.TryAcquireRead() },
	} {
		out[name] = sim.CutSweep{History: sim.TakeGive[*rwlock.Held]{Dir: "/rw", Take: take, Give: give}.History}
		out[name+" contended"] = sim.CutSweep{History: sim.TakeGive[*rwlock.Held]{Dir: "/rw", Take: take, Give: give, Contended: true}.History}
	}
	return out
}

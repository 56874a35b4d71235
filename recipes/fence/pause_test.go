package fence_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/recipes/fence/internal/simstore"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// The guarantee and its limit, one history each, on two simulated
// clients: client 0 holds the lock, writes the key, and freezes past its
// session timeout (World.Pause); its session expires, client 1 takes the
// lock; then client 0 runs on and writes with its old token.
//
//   - newer holder wrote: client 0's write is refused (ErrFenced);
//   - newer holder has not touched the key: client 0's write is accepted
//     (the fence has seen no newer token; see "What it does not
//     guarantee" in the package documentation);
//   - newer holder claimed the key with Read, writing nothing: refused.
func TestPausedHolder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		newer   func(st fence.TaskStore[uint64], tok int64) task.Task[task.Unit] // what client 1 does once it holds
		refused bool
	}{
		{"newer holder wrote", func(st fence.TaskStore[uint64], tok int64) task.Task[task.Unit] {
			return fence.WriteTask(st, "k", tok, []byte("newer"))
		}, true},
		{"newer holder did not touch the key", func(fence.TaskStore[uint64], int64) task.Task[task.Unit] { return task.Done }, false},
		{"newer holder claimed the key", func(st fence.TaskStore[uint64], tok int64) task.Task[task.Unit] {
			return func(s *task.Scope, k task.Cont[task.Unit]) {
				task.Run(s, fence.ReadTask(st, "k", tok), func(_ []byte, err error) { k(task.Unit{}, err) })
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			store := simstore.New(simstore.Config{Clock: w.Clock, Seed: 1})
			st0, st1 := store.Client(0), store.Client(1)
			lk, err := lock.New("/locks/p")
			if err != nil {
				t.Fatal(err)
			}
			h0, err := sim.Run(w, 0, lk.Acquire())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Run(w, 0, fence.WriteTask(st0, "k", h0.Token(), []byte("first"))); err != nil {
				t.Fatal(err)
			}
			waiter := sim.Submit(w, 1, lk.Acquire())
			w.Pause(0, 3*w.Timeout())
			if !w.Settle(func() bool { return waiter.Done }) || waiter.Err != nil {
				t.Fatalf("client 1 never took the lock: %v", waiter.Err)
			}
			h1 := waiter.V
			if h1.Token() <= h0.Token() {
				t.Fatalf("tokens %d then %d", h0.Token(), h1.Token())
			}
			if _, err := sim.Run(w, 1, tc.newer(st1, h1.Token())); err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool { return !w.Paused(0) }) {
				t.Fatal("client 0 never ran on")
			}
			_, err = sim.Run(w, 0, fence.WriteTask(st0, "k", h0.Token(), []byte("late")))
			if got := errors.Is(err, fence.ErrFenced); got != tc.refused {
				t.Fatalf("client 0's write after the pause: %v; want refused=%v", err, tc.refused)
			}
			if !tc.refused && err != nil {
				t.Fatal(err)
			}
			if _, err := store.CheckTokenOrder(); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(h0.Err(), lock.ErrLockLost) {
				t.Fatalf("client 0's lock: %v; want lost", h0.Err())
			}
		})
	}
}

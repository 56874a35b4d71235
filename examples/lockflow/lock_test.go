package main

import (
	"errors"
	"slices"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// A Lock that ends early leaves no node behind: while it waits behind the
// holder, its deadline passes or its flow is canceled, or its deadline
// passes before its create's reply came (the node's name never known).
// Once the holder unlocks, no node is left in the directory but the one of
// the next Lock on the same session, which takes the lock. (A Lock that
// left its node waited behind that orphan for as long as its session
// lived.) On the simulation's world: one simulated clock, everything
// driven from the test's goroutine, no sleep.
func TestLockEndedEarlyLeavesNoNode(t *testing.T) {
	const dir = "/l"
	lock := task.Flow(func(f *task.F) (string, error) { return Lock(f, dir) })
	unlock := func(node string) task.Task[task.Unit] {
		return task.Flow(func(f *task.F) (task.Unit, error) { return task.Unit{}, Unlock(f, node) })
	}
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, w *sim.World) error // client 1's Lock, ended early
		want error
	}{
		{"deadline while waiting", func(t *testing.T, w *sim.World) error {
			_, err := sim.Run(w, 1, c.Timeout(lock, time.Second))
			return err
		}, task.ErrDeadlineExceeded},
		{"cancel while waiting", func(t *testing.T, w *sim.World) error {
			var out sim.Outcome[string]
			h := executor.Submit(w.Execs[1], lock, func(v string, err error) { out = sim.Outcome[string]{V: v, Err: err, Done: true} })
			if !w.Settle(func() bool { return len(w.Children(dir)) == 2 }) {
				t.Fatalf("client 1's node never came: %v", w.Children(dir))
			}
			h.Cancel()
			if !w.Settle(func() bool { return out.Done }) {
				t.Fatal("the canceled Lock never returned")
			}
			return out.Err
		}, task.ErrCanceled},
		{"deadline before the create's reply", func(t *testing.T, w *sim.World) error {
			w.Server.Delay(w.Conns[1], 2*time.Second) // the create is applied, its reply comes after the deadline
			_, err := sim.Run(w, 1, c.Timeout(lock, time.Second))
			if kids := w.Children(dir); len(kids) != 2 {
				t.Fatalf("at the deadline, nodes in %s: %v; want the holder's and client 1's", dir, kids)
			}
			return err
		}, task.ErrDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := sim.Run(w, 0, task.Create(dir, nil, task.Persistent)); err != nil {
				t.Fatal(err)
			}
			held, err := sim.Run(w, 0, lock)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.end(t, w); !errors.Is(err, tc.want) {
				t.Fatalf("client 1's Lock: %v, want %v", err, tc.want)
			}
			if _, err := sim.Run(w, 0, unlock(held)); err != nil {
				t.Fatal(err)
			}
			again := sim.Submit(w, 1, lock)
			limit := w.Clock.Now().Add(time.Minute) // of simulated time: the session lives on
			if !w.Settle(func() bool { return again.Done || w.Clock.Now().After(limit) }) || !again.Done {
				t.Fatalf("no one holds the lock, yet client 1's next Lock has not returned (still waiting); nodes in %s: %v", dir, w.Children(dir))
			}
			if again.Err != nil {
				t.Fatalf("client 1's next Lock: %v", again.Err)
			}
			if kids := w.Children(dir); len(kids) != 1 || dir+"/"+kids[0] != again.V {
				t.Fatalf("client 1 holds %s; nodes in %s: %v, want its node alone", again.V, dir, kids)
			}
			if _, err := sim.Run(w, 1, unlock(again.V)); err != nil {
				t.Fatal(err)
			}
			if kids := w.Children(dir); len(kids) != 0 {
				t.Fatalf("nodes left in %s: %v", dir, kids)
			}
			if len(w.Errs) > 0 {
				t.Fatalf("errors reported: %v", w.Errs)
			}
		})
	}
}

// An Unlock whose body's scope has ended (the section ran past its
// deadline) still deletes the node, by a flow of its own: the next Lock
// of the session does not wait behind it.
func TestUnlockAfterItsScopeEnded(t *testing.T) {
	const dir = "/l"
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create(dir, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	unlocked := false // the body has called Unlock, after its deadline
	_, err = sim.Run(w, 0, c.Timeout(task.Flow(func(f *task.F) (task.Unit, error) {
		node, err := Lock(f, dir)
		if err != nil {
			return task.Unit{}, err
		}
		_, err = task.Await(f, c.Sleep(2*time.Second)) // the section, past the deadline
		unlocked = err != nil
		return task.Unit{}, errors.Join(err, Unlock(f, node))
	}), time.Second))
	if !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Fatalf("the section: %v, want %v", err, task.ErrDeadlineExceeded)
	}
	if !w.Settle(func() bool { return unlocked && len(w.Children(dir)) == 0 }) {
		t.Fatalf("Unlock called after the deadline: %v; nodes left in %s: %v", unlocked, dir, w.Children(dir))
	}
	if len(w.Errs) > 0 {
		t.Fatalf("errors reported: %v", w.Errs)
	}
}

// A Lock waiting behind the holder outlives a watch another user of its
// session removes (RemoveWatches of type Any on the holder's node, as a
// recursive cache of it stopping does): it lists again, watches again, and
// takes the lock once the holder unlocks. (It failed with
// task.ErrWatchRemoved.)
func TestLockOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	const dir = "/l"
	lock := task.Flow(func(f *task.F) (string, error) { return Lock(f, dir) })
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sim.Run(w, 0, task.Create(dir, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	held, err := sim.Run(w, 0, lock)
	if err != nil {
		t.Fatal(err)
	}
	waiter := sim.Submit(w, 1, lock)
	if !w.Settle(func() bool { got, _ := w.Server.WatchedPaths(w.Conns[1]); return len(got) > 0 }) {
		t.Fatal("client 1's Lock never watched the holder's node")
	}
	if got, _ := w.Server.WatchedPaths(w.Conns[1]); !slices.Equal(got, []string{held}) {
		t.Fatalf("client 1 watches %v, want %v", got, []string{held})
	}
	if !w.Server.RemoveWatchesNow(w.Conns[1], held, task.WatcherAny) {
		t.Fatal("the server held no watch of client 1's on the holder's node")
	}
	w.Settle(func() bool { return waiter.Done })
	if waiter.Done {
		t.Fatalf("client 1's Lock returned (%q, %v) while client 0 holds the lock", waiter.V, waiter.Err)
	}
	if _, err := sim.Run(w, 0, task.Delete(held, -1)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return waiter.Done }) {
		t.Fatal("client 1's Lock never returned after the holder unlocked")
	}
	if waiter.Err != nil {
		t.Fatalf("client 1's Lock: %v", waiter.Err)
	}
}

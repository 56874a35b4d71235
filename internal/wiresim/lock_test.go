package wiresim_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/wiresim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

const (
	lockDir = "/locks/w"
	lockLog = "/fence"
)

// lockScenario: every client loops on the lock's blocking face over
// zkadapter: Acquire (with a deadline drawn from the seed, so that some
// attempts give up and withdraw), two fenced writes of the fencing log
// ("enter", "exit", sim.FencedEntry), Release. Judged by the in-memory
// lock scenario's judge, sim.CheckFencingOf on the server's tree: in the
// order the server applied them, the tokens of the fenced writes never go
// down, so two holders never wrote at once. An acquire or a section that
// fails must fail with an error the lock documents.
func lockScenario() wiresim.Scenario {
	return wiresim.Scenario{
		Name:   "wire-lock",
		Faults: wiresim.AllClasses,
		Setup: func(r *wiresim.Run, ctx context.Context) error {
			return createAll(ctx, r, lockLog, "/locks", lockDir)
		},
		Client: func(r *wiresim.Run, ctx context.Context, i int) {
			cl, err := lock.NewClient(r.Execs[i], lockDir)
			if err != nil {
				r.Errorf("client %d: %v", i, err)
				return
			}
			rnd := r.Rand(i)
			for ctx.Err() == nil {
				lockRound(r, ctx, i, cl, rnd)
			}
		},
		Check: func(r *wiresim.Run) error {
			sections, err := sim.CheckFencingOf(r.Server, r.ServerPath(lockLog))
			r.Count("sections", sections)
			if err == nil && sections == 0 && r.Progressed(0)+r.Progressed(1)+r.Progressed(2) > 0 {
				err = fmt.Errorf("critical sections wrote, and the fence log %s is empty", r.ServerPath(lockLog))
			}
			return err
		},
	}
}

func lockRound(r *wiresim.Run, ctx context.Context, i int, cl *lock.Client, rnd *rand.Rand) {
	actx, cancel := context.WithTimeout(ctx, time.Duration(20+rnd.IntN(300))*time.Millisecond)
	h, err := cl.Acquire(actx)
	cancel()
	if err != nil {
		if !expected(err) {
			r.Errorf("client %d: acquire: %v", i, err)
		}
		r.Count("acquires-failed", 1)
		r.Logf("client %d: acquire: %v", i, err)
		return
	}
	r.Logf("client %d: holds %s token %d", i, h.Path(), h.Token())
	wrote := 0
	for _, kind := range []string{"enter", "exit"} {
		if _, err := cl.Fenced(ctx, h, sim.FencedEntry(lockLog, h.Token(), kind)); err != nil {
			if !expected(err) && !errors.Is(err, lock.ErrLockLost) && !errors.Is(err, task.ErrNoNode) && !errors.Is(err, task.ErrBadVersion) {
				r.Errorf("client %d: fenced write: %v", i, err)
			}
			break
		}
		wrote++
	}
	if wrote == 2 {
		r.Progress(i)
	} else {
		r.Count("sections-cut-short", 1)
	}
	if err := cl.Release(ctx, h); err != nil && !expected(err) {
		r.Errorf("client %d: release: %v", i, err)
	}
}

// expected reports whether err is one a blocking call may end with under
// faults: the caller's context, the session's end, an outcome left open
// by the connection, or the client closing.
func expected(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrDeadlineExceeded) ||
		errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) ||
		errors.Is(err, lock.ErrLockLost) || task.IsRetryable(err)
}

// createAll creates the persistent nodes on client 0, again after an
// outcome the connection left open or the session's end (a loaded
// machine can starve a client past its short session timeout even
// before the faults start).
func createAll(ctx context.Context, r *wiresim.Run, paths ...string) error {
	for _, p := range paths {
		for {
			_, err := r.Execs[0].Create(ctx, p, nil, task.Persistent)
			if err == nil || errors.Is(err, task.ErrNodeExists) {
				break
			}
			if !(task.IsRetryable(err) || errors.Is(err, task.ErrSessionExpired)) || ctx.Err() != nil {
				return err
			}
		}
	}
	return nil
}

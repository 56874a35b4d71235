package rwlock_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// realOpts: sessions may last up to 10s, so a re-election after a killed
// member does not expire them (an expiry is handled anyway).
var realOpts = zkserver.Options{MaxSessionTimeout: 10 * time.Second}

// rwMutexes returns n Clients on dir, each on a session of its own.
func rwMutexes(t testing.TB, ctx context.Context, addrs []string, dir string, n int) []*rwlock.Client {
	t.Helper()
	ms := make([]*rwlock.Client, n)
	for i := range ms {
		m, err := rwlock.NewClient(realtest.Dial(t, ctx, addrs, realtest.Options{}).Ex, dir)
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = m
	}
	return ms
}

// realStats counts what happened in contend.
type realStats struct {
	sections  atomic.Int64 // sections whose writes all went through
	lost      atomic.Int64 // fenced writes refused: the lock was lost
	uncertain atomic.Int64 // fenced writes whose outcome is unknown
	retried   atomic.Int64 // lock calls that failed and were tried again
}

// contend runs one goroutine per Client; each takes the lock rounds
// times, the write lock in one round of three and the read lock
// otherwise, logs enter and exit under logDir with fenced writes
// (kinds wenter/wexit, renter/rexit) and unlocks. After every section
// tick is called with the number of sections so far.
func contend(t *testing.T, ctx context.Context, ms []*rwlock.Client, logDir string, rounds int, tick func(int64)) *realStats {
	t.Helper()
	st := &realStats{}
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex := m.Executor()
			for done := 0; done < rounds; {
				lock, w := m.AcquireRead, "r"
				if (i+done)%3 == 0 {
					lock, w = m.Acquire, "w"
				}
				h, err := lock(ctx)
				if err != nil {
					if ctx.Err() == nil && (task.IsRetryable(err) || errors.Is(err, task.ErrSessionExpired) || errors.Is(err, rwlock.ErrLockLost)) {
						st.retried.Add(1)
						continue
					}
					errs[i] = fmt.Errorf("client %d: lock: %w", i, err)
					return
				}
				ok := true
				for _, kind := range []string{"enter", "exit"} {
					_, err := executor.Await(ctx, ex, h.Fenced(sim.FencedEntry(logDir, h.Token(), w+kind)))
					if err == nil {
						continue
					}
					switch {
					case errors.Is(err, rwlock.ErrLockLost):
						st.lost.Add(1)
					case task.IsRetryable(err) || errors.Is(err, task.ErrSessionExpired):
						st.uncertain.Add(1)
					default:
						errs[i] = fmt.Errorf("client %d: fenced %s: %w", i, kind, err)
						return
					}
					ok = false
					break
				}
				if err := m.Release(ctx, h); err != nil {
					errs[i] = fmt.Errorf("client %d: unlock: %w", i, err)
					return
				}
				done++
				if ok {
					if n := st.sections.Add(1); tick != nil {
						tick(n)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return st
}

// readLog reads a fencing log written with sim.FencedEntry from a real
// server, in the server's order.
func readLog(ctx context.Context, ex *executor.Executor, logDir string) ([]sim.LogEntry, error) {
	cl, err := executor.Await(ctx, ex, task.Children(logDir))
	if err != nil {
		return nil, err
	}
	var log []sim.LogEntry
	for _, name := range cl.Names {
		parts := strings.Split(strings.TrimPrefix(name, "t"), "-")
		if len(parts) != 3 {
			return nil, fmt.Errorf("log entry %q", name)
		}
		tok, err1 := strconv.ParseInt(parts[0], 10, 64)
		seq, err2 := strconv.ParseInt(parts[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("log entry %q", name)
		}
		log = append(log, sim.LogEntry{Seq: seq, Token: tok, Kind: parts[1]})
	}
	slices.SortFunc(log, func(a, b sim.LogEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return log, nil
}

// judgeReal judges the log (judgeRW) and checks that no contender node is
// left in dir.
func judgeReal(t *testing.T, ctx context.Context, ex *executor.Executor, dir, logDir string) judged {
	t.Helper()
	log, err := readLog(ctx, ex, logDir)
	if err != nil {
		t.Fatal(err)
	}
	j, err := judgeRW(log)
	if err != nil {
		t.Fatal(err)
	}
	// A hold lost in a failover has its node deleted in the background,
	// and Release of it does not wait: the contenders' nodes must be gone
	// within twice the longest session timeout, watched, not at once.
	realtest.WaitEmpty(t, ctx, ex, dir, 2*realOpts.MaxSessionTimeout)
	return j
}

func mkdirs(t *testing.T, ctx context.Context, ex *executor.Executor, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := executor.Await(ctx, ex, task.Create(p, nil, task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// On a real standalone server, 5 sessions x 15 sections, a third of them
// writers: judged by the fencing log (judgeRW), no writer's section
// overlaps another holder's, and tokens order the writers.
func TestRealStandalone(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const dir, logDir = "/rw-real/lock", "/rw-real-log"
	admin := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{}).Ex
	mkdirs(t, ctx, admin, logDir)
	const clients, rounds = 5, 15
	st := contend(t, ctx, rwMutexes(t, ctx, srv.Addrs(), dir, clients), logDir, rounds, nil)
	j := judgeReal(t, ctx, admin, dir, logDir)
	t.Logf("%d writer and %d reader sections logged, %d pairs of readers overlapping; %d lost, %d uncertain, %d retried",
		j.writers, j.readers, j.overlaps, st.lost.Load(), st.uncertain.Load(), st.retried.Load())
	if j.writers+j.readers != clients*rounds || j.writers == 0 || j.readers == 0 {
		t.Fatalf("%d writer and %d reader sections logged, want %d in all", j.writers, j.readers, clients*rounds)
	}
}

// The same on a 3-server ensemble whose leader is killed a third of the
// way through and restarted. Sections cut by the failover may lose their
// writes (refused or of unknown outcome), never overlap a writer's.
func TestRealEnsembleServerKilled(t *testing.T) {
	zkserver.Require(t)
	ens := zkserver.Ensemble(t, 3, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const dir, logDir = "/rw-ens/lock", "/rw-ens-log"
	admin := realtest.Dial(t, ctx, ens.Addrs(), realtest.Options{}).Ex
	mkdirs(t, ctx, admin, logDir)
	const clients, rounds = 5, 15
	var (
		once      sync.Once
		killed    = -1
		restarted = make(chan error, 1)
	)
	st := contend(t, ctx, rwMutexes(t, ctx, ens.Addrs(), dir, clients), logDir, rounds, func(n int64) {
		if n < clients*rounds/3 {
			return
		}
		once.Do(func() {
			killed = max(ens.Leader(ctx), 0)
			ens.Kill(killed)
			go func() { restarted <- ens.Restart(ctx, killed) }()
		})
	})
	if killed < 0 {
		t.Fatal("no server was killed")
	}
	if err := <-restarted; err != nil {
		t.Fatalf("restart server %d: %v", killed, err)
	}
	j := judgeReal(t, ctx, admin, dir, logDir)
	t.Logf("server %d killed and restarted; %d writer and %d reader sections logged, %d completed, %d lost, %d uncertain, %d retried",
		killed, j.writers, j.readers, st.sections.Load(), st.lost.Load(), st.uncertain.Load(), st.retried.Load())
	if int64(j.writers+j.readers) < st.sections.Load() {
		t.Fatalf("%d sections logged, fewer than the %d completed", j.writers+j.readers, st.sections.Load())
	}
}

package lock_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// Mutual exclusion under faults drawn from the seed (connection drops
// applied and not, partitions, delays, session expiries). Each client
// loops: acquire, write "enter" and "exit" log entries with fenced writes,
// release. The judge is the server's log: entries, in the order the server
// applied them, carry fencing tokens that never go down, so the critical
// sections never interleave and come in strictly increasing token order.
// Also: at each acquire, no other client holds a lock it thinks it holds
// whose node is still on the server; a holder whose session expired and
// that writes once more regardless is refused by ZooKeeper; and when all
// is done no contender node is left. The seed is in every failure message.
func TestSeededFaults(t *testing.T) {
	seeds := uint64(100)
	if testing.Short() {
		seeds = 20
	}
	var total simStats
	for seed := uint64(1); seed <= seeds; seed++ {
		st := simulate(t, seed)
		if t.Failed() {
			t.Fatalf("seed %d failed (rerun with this seed)", seed)
		}
		total.sections += st.sections
		total.lost += st.lost
		total.failed += st.failed
		total.rejected += st.rejected
	}
	t.Logf("%d seeds: %d critical sections logged, %d locks lost, %d fenced writes rejected, %d acquires failed and retried",
		seeds, total.sections, total.lost, total.rejected, total.failed)
	if total.lost == 0 || total.failed == 0 || total.rejected == 0 {
		t.Fatal("the drawn faults never bit: the test checks nothing")
	}
}

type simStats struct{ sections, lost, failed, rejected int }

func simulate(t *testing.T, seed uint64) simStats {
	const clients, rounds, dir = 4, 4, "/locks/sim"
	w, _ := newWorld(t, seed, clients, fakezk.Config{
		FaultRate: 0.03, Trace: true,
		Faults: fakezk.FaultConfig{MaxPartition: 10 * time.Second, MaxDelay: time.Second},
	})
	if _, err := mustRun(t, w, 0, task.Create("/log", nil, task.Persistent)); err != nil {
		// a drawn fault may hit this first request: retry it
		if _, err := mustRun(t, w, 0, c.Retry(task.Create("/log", nil, task.Persistent), c.Policy{On: []error{task.ErrConnectionLoss, task.ErrNotSent, task.ErrSessionExpired}})); err != nil && !errors.Is(err, task.ErrNodeExists) {
			t.Fatalf("seed %d: create /log: %v", seed, err)
		}
	}
	l := mustLock(t, dir)
	var st simStats
	cur := make([]*lock.Held, clients)
	left := make([]int, clients)
	ended := 0
	entry := func(h *lock.Held, kind string) task.MultiOp {
		return &task.CreateRequest{Path: fmt.Sprintf("/log/t%d-%s-", h.Token(), kind), Mode: task.PersistentSequential, ACL: task.OpenACL}
	}
	var lostHandles []*lock.Held
	var start func(i int)
	next := func(i int) {
		cur[i] = nil
		if left[i]--; left[i] == 0 {
			ended++
			return
		}
		start(i)
	}
	halt := false // no new rounds once the run is judged (Shutdown fails every flow)
	start = func(i int) {
		if halt {
			return
		}
		executor.Submit(w.Execs[i], l.Acquire(), func(h *lock.Held, err error) {
			if err != nil {
				if !halt && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, lock.ErrLockLost) {
					t.Errorf("seed %d: client %d: acquire: %v", seed, i, err)
				}
				st.failed++
				start(i)
				return
			}
			for j, o := range cur {
				if o == nil || j == i || !o.IsHeld() {
					continue
				}
				if _, ok := w.Server.NodeStat(o.Path()); ok {
					t.Errorf("seed %d: client %d acquired %s while client %d holds %s", seed, i, h.Path(), j, o.Path())
				}
			}
			cur[i] = h
			// The section lasts a while (on the simulated clock), so that
			// faults hit holders too.
			section := c.Seq(h.Fenced(entry(h, "enter")), c.Seq(c.Sleep(2*time.Second), h.Fenced(entry(h, "exit"))))
			executor.Submit(w.Execs[i], section, func(_ []task.MultiResult, err error) {
				if errors.Is(h.Err(), lock.ErrLockLost) || errors.Is(err, task.ErrSessionExpired) {
					st.lost++
					lostHandles = append(lostHandles, h)
				}
				if errors.Is(err, lock.ErrLockLost) {
					st.rejected++ // a fenced write ZooKeeper refused
				}
				if err != nil && !errors.Is(err, lock.ErrLockLost) {
					if !halt && !task.IsRetryable(err) && !errors.Is(err, task.ErrSessionExpired) {
						t.Errorf("seed %d: client %d: section: %v", seed, i, err)
					}
				}
				// A holder that lost its lock and ignores it writes once
				// more, on the next session: ZooKeeper must refuse.
				var late task.Task[[]task.MultiResult]
				if errors.Is(err, task.ErrSessionExpired) {
					late = c.Catch(h.Fenced(entry(h, "late")), func(err error) task.Task[[]task.MultiResult] {
						if errors.Is(err, lock.ErrLockLost) {
							st.rejected++
						} else if !halt && !task.IsRetryable(err) && !errors.Is(err, task.ErrSessionExpired) {
							t.Errorf("seed %d: client %d: late write: %v", seed, i, err)
						}
						return task.Value[[]task.MultiResult](nil)
					})
				} else {
					late = task.Value[[]task.MultiResult](nil)
				}
				executor.Submit(w.Execs[i], c.Seq(late, h.Release()), func(_ task.Unit, err error) {
					if err != nil && !halt {
						t.Errorf("seed %d: client %d: release: %v", seed, i, err)
					}
					next(i)
				})
			})
		})
	}
	for i := range clients {
		left[i] = rounds
		start(i)
	}
	ok := w.Settle(func() bool { return ended == clients || t.Failed() })
	halt = true
	if !ok || t.Failed() {
		t.Fatalf("seed %d: stuck with %v rounds left", seed, left)
	}
	// Judge the log.
	type entryT struct {
		seq   int64
		token int64
		kind  string
	}
	var log []entryT
	for _, p := range w.Server.Paths() {
		name, ok := strings.CutPrefix(p, "/log/t")
		if !ok {
			continue
		}
		parts := strings.Split(name, "-")
		tok, err1 := strconv.ParseInt(parts[0], 10, 64)
		seq, err2 := strconv.ParseInt(parts[2], 10, 64)
		if len(parts) != 3 || err1 != nil || err2 != nil {
			t.Fatalf("seed %d: log entry %s", seed, p)
		}
		if parts[1] == "late" {
			t.Fatalf("seed %d: a fenced write after the loss of the lock was applied: %s", seed, p)
		}
		log = append(log, entryT{seq, tok, parts[1]})
	}
	slices.SortFunc(log, func(a, b entryT) int { return int(a.seq - b.seq) })
	for i := 1; i < len(log); i++ {
		if log[i].token < log[i-1].token {
			t.Fatalf("seed %d: critical sections interleave: entry %d (token %d %s) after entry %d (token %d %s)",
				seed, log[i].seq, log[i].token, log[i].kind, log[i-1].seq, log[i-1].token, log[i-1].kind)
		}
		if log[i].token == log[i-1].token && log[i].kind == log[i-1].kind {
			t.Fatalf("seed %d: token %d logged %q twice", seed, log[i].token, log[i].kind)
		}
		if log[i].kind == "enter" {
			st.sections++
		}
	}
	if len(log) > 0 && log[0].kind == "enter" {
		st.sections++
	}
	// A holder whose session expired was told so, and a release did not
	// hide it.
	for _, h := range lostHandles {
		if !isClosed(h.Done()) || !errors.Is(h.Err(), lock.ErrLockLost) {
			t.Fatalf("seed %d: lock %s lost but Err is %v", seed, h.Path(), h.Err())
		}
	}
	// No contender node outlives the run.
	if !w.Settle(func() bool { return len(w.Children(dir)) == 0 }) {
		t.Fatalf("seed %d: contender nodes left: %v", seed, w.Children(dir))
	}
	for _, err := range w.Errs {
		if !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrClosed) {
			t.Errorf("seed %d: cleanup failed: %v", seed, err)
		}
	}
	return st
}

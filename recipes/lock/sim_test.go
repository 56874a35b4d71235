package lock_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// Mutual exclusion under faults drawn from the seed (connection drops
// applied and not, partitions, delays, session expiries). Each client
// loops: acquire, write "enter" and "exit" log entries with fenced writes,
// release. The judge is the server's log: entries, in the order the server
// applied them, carry fencing tokens that never go down, so the critical
// sections never interleave and come in strictly increasing token order.
// Checked after every step of the simulation: no live session owns two
// contender nodes (an orphan of a lost create), no contender node is
// watched by two waiters (a herd), and a holder whose client is on a new
// session has been told its lock is lost. Also: at each acquire, no other
// client holds a lock it thinks it holds whose node is still on the
// server; a holder whose session expired and that writes once more
// regardless is refused by ZooKeeper; and when all is done no contender
// node is left. The seed is in every failure message.
func TestSeededFaults(t *testing.T) {
	seeds := uint64(100)
	if testing.Short() {
		seeds = 20
	}
	total := runSeeds(t, seeds, simOpts{})
	if total.lost == 0 || total.failed == 0 || total.rejected == 0 {
		t.Fatal("the drawn faults never bit: the test checks nothing")
	}
	if total.marks == 0 {
		t.Fatal("no holder marked its node: the handoff by mark was not exercised")
	}
}

// The same simulation with the directory's counter started 3 short of
// int32's maximum: the sequence runs out within the first rounds, and the
// lock must keep its guarantees through it (no holder with an exhausted
// number, the directory recreated so the counter restarts).
func TestSeededFaultsAcrossSequenceWrap(t *testing.T) {
	seeds := uint64(100)
	if testing.Short() {
		seeds = 20
	}
	total := runSeeds(t, seeds, simOpts{cversion: math.MaxInt32 - 3})
	if total.resets == 0 || total.exhausted == 0 {
		t.Fatalf("the counter never ran out (%d resets, %d exhausted names): the test checks nothing", total.resets, total.exhausted)
	}
	if total.lost == 0 || total.rejected == 0 {
		t.Fatal("the drawn faults never bit")
	}
}

// The same simulation with half the clients taking the lock with
// TryAcquire: mutual exclusion holds, a try that finds the lock taken
// fails with ErrBusy and leaves no node (no live session owns two
// contender nodes, none is left at the end), under the same faults.
func TestSeededFaultsTry(t *testing.T) {
	seeds := uint64(100)
	if testing.Short() {
		seeds = 20
	}
	total := runSeeds(t, seeds, simOpts{try: true})
	if total.busy == 0 || total.sections == 0 || total.lost == 0 {
		t.Fatalf("tries never met a busy lock (%d busy, %d sections, %d lost): the test checks nothing", total.busy, total.sections, total.lost)
	}
	t.Logf("%d tries found the lock busy", total.busy)
	// And across the counter's wrap: a try with an exhausted number waits
	// for no one (it goes on only when the directory has no other
	// contender).
	wrap := runSeeds(t, seeds, simOpts{try: true, cversion: math.MaxInt32 - 3})
	if wrap.resets == 0 || wrap.busy == 0 {
		t.Fatalf("the counter never ran out under tries (%d resets, %d busy)", wrap.resets, wrap.busy)
	}
}

// The large run of make sim: SIM_SEEDS seeds of each variant above
// (plain, across the counter's wrap, with tries), skipped when unset: the
// first half fixed (1 up), the second drawn as make sim draws them
// (sim.DrawnFrom: new seeds for each commit).
func TestSimExplore(t *testing.T) {
	n, err := strconv.ParseUint(os.Getenv("SIM_SEEDS"), 10, 64)
	if err != nil || n == 0 {
		t.Skip("SIM_SEEDS not set")
	}
	if os.Getenv("GOGC") == "" { // as sim.Explore runs
		defer debug.SetGCPercent(debug.SetGCPercent(sim.ExploreGCPercent))
	}
	for _, v := range []struct {
		name string
		o    simOpts
	}{{"plain", simOpts{}}, {"wrap", simOpts{cversion: math.MaxInt32 - 3}}, {"try", simOpts{try: true}}, {"nowrite", simOpts{noWrite: true}}} {
		t.Run(v.name, func(t *testing.T) {
			runSeedsFrom(t, 1, n-n/2, v.o)
			from, why := sim.DrawnFrom()
			t.Logf("drawn seeds from %d (%s)", from, why)
			runSeedsFrom(t, from, n/2, v.o)
		})
	}
}

func runSeeds(t *testing.T, seeds uint64, o simOpts) simStats {
	t.Helper()
	return runSeedsFrom(t, 1, seeds, o)
}

// runSeedsFrom runs seeds from, from+1, ... (seeds of them).
func runSeedsFrom(t *testing.T, from, seeds uint64, o simOpts) simStats {
	t.Helper()
	var total simStats
	for seed := from; seed < from+seeds; seed++ {
		st, err := simulate(seed, o)
		if err != nil {
			t.Fatalf("seed %d: %v (rerun with this seed)", seed, err)
		}
		total.add(st)
	}
	t.Logf("%d seeds: %d critical sections logged, %d locks lost, %d fenced writes rejected, %d acquires failed and retried, %d given up at a deadline, %d exhausted contender names seen, %d directory resets, %d marks sent",
		seeds, total.sections, total.lost, total.rejected, total.failed, total.gaveUp, total.exhausted, total.resets, total.marks)
	if seeds >= 50 && total.gaveUp == 0 {
		t.Fatalf("no acquire gave up at its deadline in %d seeds: the cleanup after a deadline went untested", seeds)
	}
	return total
}

type simOpts struct {
	// cversion, if not 0, is where the lock directory's counter starts.
	cversion int32
	// try: odd clients take the lock with TryAcquire, and after ErrBusy
	// try again a second later (simulated).
	try bool
	// noWrite: the contender nodes' ACL (WithACL) refuses WRITE, so every
	// mark is refused and holds go on unmarked, and each holder watches
	// its hold (Err) as soon as it is granted, before its mark settles.
	noWrite bool
}

type simStats struct{ sections, lost, failed, rejected, exhausted, resets, busy, marks, gaveUp int }

func (s *simStats) add(o simStats) {
	s.sections += o.sections
	s.lost += o.lost
	s.failed += o.failed
	s.rejected += o.rejected
	s.exhausted += o.exhausted
	s.resets += o.resets
	s.busy += o.busy
	s.marks += o.marks
	s.gaveUp += o.gaveUp
}

// simulate runs one seed and returns the first violation it saw.
func simulate(seed uint64, o simOpts) (st simStats, violation error) {
	const clients, rounds, dir = 4, 4, "/locks/sim"
	w, cnts, err := newCounted(seed, clients, fakezk.Config{
		FaultRate: 0.03, Trace: os.Getenv("DTRACE") != "", // the trace is printed only then
		Faults: fakezk.FaultConfig{MaxPartition: 10 * time.Second, MaxDelay: time.Second},
	})
	if err != nil {
		return st, err
	}
	defer func() {
		// Every executor closes with its world: the fast path's state and
		// the holders' list go with it.
		w.Close()
		for i, ex := range w.Execs {
			if n := lock.WatchedSessions(ex); n != 0 && violation == nil {
				violation = fmt.Errorf("client %d: fast-path state kept for %d sessions after its executor closed", i, n)
			}
			if lock.KeepsHolders(ex) && violation == nil {
				violation = fmt.Errorf("client %d: holders kept after its executor closed", i)
			}
		}
	}()
	fail := func(format string, args ...any) {
		if violation == nil {
			violation = fmt.Errorf(format, args...)
		}
	}
	// Setup; a drawn fault may hit these requests: try again (a new flow,
	// on the current session).
	for _, p := range []string{"/log", "/locks", dir} {
		var err error
		for range 20 {
			if _, err = sim.Run(w, 0, task.Create(p, nil, task.Persistent)); err == nil || errors.Is(err, task.ErrNodeExists) {
				err = nil
				break
			}
		}
		if err != nil {
			return st, fmt.Errorf("create %s: %w", p, err)
		}
	}
	if o.cversion != 0 {
		if err := w.SetCounters(dir, 0, o.cversion); err != nil {
			return st, err
		}
	}
	var lopts []lock.Option
	if o.noWrite {
		noWrite := []task.ACL{{Perms: task.PermAll &^ task.PermWrite, Scheme: "world", ID: "anyone"}}
		lopts = append(lopts, lock.WithACL(func(p string) []task.ACL {
			if strings.HasPrefix(p, dir+"/") {
				return noWrite
			}
			return task.OpenACL
		}))
	}
	l, err := lock.New(dir, lopts...)
	if err != nil {
		return st, err
	}
	cur := make([]*lock.Held, clients)
	left := make([]int, clients)
	ended := 0
	entry := func(h *lock.Held, kind string) task.MultiOp { return sim.FencedEntry("/log", h.Token(), kind) }
	dirs := map[int64]bool{} // czxids of the lock directory seen at acquires
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
	halt := false // no new rounds once the run is judged (Close fails every flow)
	start = func(i int) {
		if halt {
			return
		}
		acquire := l.Acquire()
		timed := false
		switch {
		case o.try && i%2 == 1:
			acquire = l.TryAcquire()
		case i == 2 && left[i]%2 == 0:
			// This client gives up waiting after a while on every other
			// round (a deadline, drawn from the seed): the attempt's
			// cleanup must delete its node, which the orphan and
			// leftover checks judge.
			timed = true
			acquire = c.Timeout(acquire, time.Duration(1+(seed+uint64(left[i]))%4)*time.Second)
		}
		executor.Submit(w.Execs[i], acquire, func(h *lock.Held, err error) {
			if errors.Is(err, lock.ErrBusy) && o.try && i%2 == 1 {
				// Its node must be gone already or be deleted by its
				// cleanup: the orphan and leftover checks judge that.
				st.busy++
				executor.Submit(w.Execs[i], c.Sleep(time.Second), func(task.Unit, error) { start(i) })
				return
			}
			if timed && errors.Is(err, task.ErrDeadlineExceeded) {
				st.gaveUp++
				for p := range cnts[i].watches {
					p.stale = true
				}
				// Its cleanup deletes its node as a flow of its own, past
				// lost replies: one delete, so once the session has been
				// connected for 15 simulated seconds in a row (longer than
				// a silent partition goes unnoticed) the node must be gone,
				// unless the session ended and took it. The client starts
				// again once the node is gone (judged from the server's
				// state).
				gs, _ := w.Execs[i].Current()
				gaveSess := gs.ID
				var connected time.Duration
				var again func()
				again = func() {
					if halt {
						return
					}
					for _, n := range contenders(w, dir) {
						if st, ok := w.NodeStat(dir + "/" + n); ok && st.EphemeralOwner == gaveSess {
							if sess, state := w.Execs[i].Current(); state == task.StateConnected && sess.ID == gaveSess {
								connected += 100 * time.Millisecond
							} else {
								connected = 0
							}
							if connected > 15*time.Second {
								fail("client %d gave up waiting, and its node %s is still there after %v connected", i, n, connected)
								return
							}
							executor.Submit(w.Execs[i], c.Sleep(100*time.Millisecond), func(task.Unit, error) { again() })
							return
						}
					}
					start(i)
				}
				again()
				return
			}
			if err != nil {
				// A retryable error should not come out of Acquire, but a
				// caller would retry it: what it left behind is judged by
				// the orphan check.
				if !halt && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, lock.ErrLockLost) && !task.IsRetryable(err) {
					fail("client %d: acquire: %v", i, err)
				}
				st.failed++
				start(i)
				return
			}
			if o.noWrite {
				_ = h.Err() // watches the hold before its mark settles
			}
			// Two holders whose nodes both exist could both write. (A
			// holder whose own node is gone already, told of its
			// predecessor's deletion after its own session expired on
			// the server, holds a lost lock: its fenced writes are
			// refused, which the log judges.)
			_, mine := w.NodeStat(h.Path())
			for j, o := range cur {
				if !mine || o == nil || j == i || !o.IsHeld() {
					continue
				}
				if _, ok := w.NodeStat(o.Path()); ok {
					fail("client %d acquired %s while client %d holds %s", i, h.Path(), j, o.Path())
				}
			}
			if h.Seq() < 0 || h.Seq() >= math.MaxInt32 {
				fail("client %d holds %s with an exhausted sequence number", i, h.Path())
			}
			if ds, ok := w.NodeStat(dir); ok {
				dirs[ds.Czxid] = true
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
				if e := h.Err(); e != nil && strings.Contains(e.Error(), "changed by someone else") {
					// Nobody here writes a lock node but its holder's
					// mark: a hold lost so was lost to itself.
					fail("client %d: lock %s lost with %v, and nobody wrote its node", i, h.Path(), e)
				}
				if errors.Is(err, lock.ErrLockLost) {
					st.rejected++ // a fenced write ZooKeeper refused
				}
				if err != nil && !errors.Is(err, lock.ErrLockLost) {
					if !halt && !task.IsRetryable(err) && !errors.Is(err, task.ErrSessionExpired) {
						fail("client %d: section: %v", i, err)
					}
				}
				// The section failed because the session ended: by the
				// time the client runs anything on its next session the
				// holder must have been told, before it writes again.
				told := task.Task[task.Unit](task.Done)
				if errors.Is(err, task.ErrSessionExpired) {
					told = func(s *task.Scope, k task.Cont[task.Unit]) {
						if h.Err() == nil && !halt {
							fail("client %d: lock %s of an ended session not signalled lost", i, h.Path())
						}
						k(task.Unit{}, nil)
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
							fail("client %d: late write: %v", i, err)
						}
						return task.Value[[]task.MultiResult](nil)
					})
				} else {
					late = task.Value[[]task.MultiResult](nil)
				}
				executor.Submit(w.Execs[i], c.Seq(told, c.Seq(late, h.Release())), func(_ task.Unit, err error) {
					// Expired: the session ended before Release ran, taking
					// the node.
					if err != nil && !halt && !errors.Is(err, task.ErrSessionExpired) {
						fail("client %d: release: %v", i, err)
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
	deadline := w.Clock.Now().Add(time.Hour)
	check := func() bool {
		st.exhausted += checkStep(w, cnts, dir, cur, fail)
		if w.Clock.Now().After(deadline) {
			fail("no progress: %v rounds left after a simulated hour", left)
		}
		return ended == clients || violation != nil
	}
	ok := w.Settle(check)
	halt = true
	if violation != nil {
		if os.Getenv("DTRACE") != "" {
			for _, l := range w.Server.Trace() {
				fmt.Println(l)
			}
		}
		return st, violation
	}
	if !ok {
		return st, fmt.Errorf("stuck with %v rounds left", left)
	}
	st.resets = len(dirs) - 1
	for _, cn := range cnts {
		st.marks += cn.kinds["SetDataRequest"] // only holders that waited write
	}
	// Judge the log.
	var names []string
	for _, p := range w.Paths() {
		if name, ok := strings.CutPrefix(p, "/log/"); ok {
			names = append(names, name)
		}
	}
	if st.sections, err = judgeLog(names); err != nil {
		return st, err
	}
	// A holder whose session expired was told so, and a release did not
	// hide it.
	for _, h := range lostHandles {
		if !isClosed(h.Done()) || !errors.Is(h.Err(), lock.ErrLockLost) {
			return st, fmt.Errorf("lock %s lost but Err is %v", h.Path(), h.Err())
		}
	}
	// No contender node outlives the run.
	if !w.Settle(func() bool { return len(contenders(w, dir)) == 0 }) {
		return st, fmt.Errorf("contender nodes left: %v", contenders(w, dir))
	}
	for _, err := range w.Errs {
		if !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrClosed) {
			return st, fmt.Errorf("cleanup failed: %v", err)
		}
	}
	return st, nil
}

// contenders are dir's children named as contenders ("...lock-<seq>").
func contenders(w *sim.World, dir string) []string {
	var out []string
	for _, n := range w.Children(dir) {
		if i := strings.LastIndex(n, "lock-"); i >= 0 && len(n) > i+5 {
			out = append(out, n)
		}
	}
	return out
}

// checkStep checks what must hold at every step and reports how many
// contender nodes carry an exhausted sequence number (a wrapped or
// saturated counter).
func checkStep(w *sim.World, cnts []*counting, dir string, cur []*lock.Held, fail func(string, ...any)) (exhausted int) {
	live := map[int64]bool{}
	for _, id := range w.Server.Sessions() {
		live[id] = true
	}
	owned := map[int64]int{}
	owner := map[string]int64{}
	for _, n := range contenders(w, dir) {
		p := dir + "/" + n
		st, ok := w.NodeStat(p)
		if !ok {
			continue
		}
		owner[p] = st.EphemeralOwner
		if owned[st.EphemeralOwner]++; owned[st.EphemeralOwner] == 2 && live[st.EphemeralOwner] {
			fail("session %#x owns two contender nodes (an orphan): %v", st.EphemeralOwner, contenders(w, dir))
		}
		seq := n[strings.LastIndex(n, "lock-")+5:]
		if strings.HasPrefix(seq, "-") || seq == "2147483647" {
			exhausted++
		}
	}
	// Waiters (exists watches of live sessions, not the holder's own) per
	// contender node. The watch of an attempt that gave up is no
	// waiter's: it stays until it fires, once, to be ignored.
	watchers := map[string]map[int]bool{}
	for _, cn := range cnts {
		for p := range cn.watches {
			if o, ok := owner[p.path]; !ok || !p.set || !live[p.sess] || o == p.sess || p.stale {
				continue
			}
			if watchers[p.path] == nil {
				watchers[p.path] = map[int]bool{}
			}
			watchers[p.path][p.client] = true
		}
	}
	for p, ws := range watchers {
		if len(ws) > 1 {
			fail("contender %s watched by %d waiters at once (a herd)", p, len(ws))
		}
	}
	for i, h := range cur {
		if h == nil || h.Err() != nil {
			continue
		}
		if sess, state := w.Execs[i].Current(); state == task.StateConnected && sess.ID != h.Session().ID {
			fail("client %d is on session %#x but its lock %s of session %#x is not lost", i, sess.ID, h.Path(), h.Session().ID)
		}
	}
	return exhausted
}

// judgeLog judges a log of fenced writes: children named
// "t<token>-<kind>-<seq>" (kind enter, exit or late) created by holders
// with Held.Fenced. In the server's order (the sequence), tokens never go
// down, no token logs one kind twice, and no token enters twice (the
// doc: tokens of successive holders strictly increase, also when one
// client takes the lock again): critical sections never interleave and
// come in strictly increasing token order; and no "late" entry (a
// write made after the lock was known lost) was applied. It returns the
// number of sections entered.
func judgeLog(names []string) (sections int, err error) {
	type entryT struct {
		seq   int64
		token int64
		kind  string
	}
	var log []entryT
	for _, name := range names {
		parts := strings.Split(strings.TrimPrefix(name, "t"), "-")
		if len(parts) != 3 || !strings.HasPrefix(name, "t") {
			return 0, fmt.Errorf("log entry %s", name)
		}
		tok, err1 := strconv.ParseInt(parts[0], 10, 64)
		seq, err2 := strconv.ParseInt(parts[2], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("log entry %s", name)
		}
		if parts[1] == "late" {
			return 0, fmt.Errorf("a fenced write after the loss of the lock was applied: %s", name)
		}
		log = append(log, entryT{seq, tok, parts[1]})
	}
	slices.SortFunc(log, func(a, b entryT) int { return cmp.Compare(a.seq, b.seq) })
	for i := range log {
		if log[i].kind == "enter" {
			sections++
		}
		if i == 0 {
			continue
		}
		if log[i].token < log[i-1].token {
			return 0, fmt.Errorf("critical sections interleave: entry %d (token %d %s) after entry %d (token %d %s)",
				log[i].seq, log[i].token, log[i].kind, log[i-1].seq, log[i-1].token, log[i-1].kind)
		}
		if log[i].token == log[i-1].token && log[i].kind == log[i-1].kind {
			return 0, fmt.Errorf("token %d logged %q twice", log[i].token, log[i].kind)
		}
		if log[i].token == log[i-1].token && log[i].kind == "enter" {
			return 0, fmt.Errorf("two holders with one token: token %d enters again (entry %d) after its %s (entry %d); tokens strictly increase from one holder to the next",
				log[i].token, log[i].seq, log[i-1].kind, log[i-1].seq)
		}
	}
	return sections, nil
}

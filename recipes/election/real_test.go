package election_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// realOpts: sessions may last up to 10s, so a re-election after a killed
// member need not expire them (expiry is handled anyway).
var realOpts = zkserver.Options{MaxSessionTimeout: 10 * time.Second}

// realClient is a client from internal/realtest on a session with the
// given timeout; stop ends the session (silent_test.go uses it too).
func realClient(t testing.TB, ctx context.Context, addrs []string, timeout time.Duration) (ex *executor.Executor, stop func()) {
	t.Helper()
	c := realtest.Dial(t, ctx, addrs, realtest.Options{SessionTimeout: timeout})
	return c.Ex, c.Stop
}

// Three candidates on a standalone server: the first leads; closing its
// session (its client goes away) hands leadership to the next in line,
// then the next, each with a larger token; the closed leader is told.
func TestRealStandaloneSuccession(t *testing.T) { realStandaloneSuccession(t, false) }

// TestRealStandaloneSuccession with every candidate under a chroot
// (realtest.Chroot).
func TestRealStandaloneSuccessionUnderRoot(t *testing.T) { realStandaloneSuccession(t, true) }

func realStandaloneSuccession(t *testing.T, underRoot bool) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chroot := realtest.Chroot(t, ctx, srv.Addrs(), underRoot)
	dir := fmt.Sprintf("/real-election-%d", time.Now().UnixNano())
	type cand struct {
		ex    *executor.Executor
		close func()
		e     *election.Election
	}
	var cs []cand
	for i := range 3 {
		c := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{SessionTimeout: 4 * time.Second, Root: chroot})
		ex, cl := c.Ex, c.Stop
		e, err := election.New(dir, election.WithData([]byte(strconv.Itoa(i))))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, cand{ex, cl, e})
	}
	l0, err := election.ClientOf(cs[0].ex, cs[0].e).Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Candidates 1 and 2 queue in this order: each starts once the one
	// before has its node.
	won := make([]chan *election.Leadership, 3)
	for i := 1; i < 3; i++ {
		won[i] = make(chan *election.Leadership, 1)
		go func() {
			l, err := election.ClientOf(cs[i].ex, cs[i].e).Campaign(ctx)
			if err != nil {
				t.Errorf("candidate %d: %v", i, err)
			}
			won[i] <- l
		}()
		for {
			cl, err := executor.Await(ctx, cs[0].ex, task.Children(dir))
			if err != nil {
				t.Fatal(err)
			}
			if len(cl.Names) == i+1 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("candidate %d never queued", i)
			case <-time.After(20 * time.Millisecond): // polling the server, not ordering
			}
		}
	}
	if who, err := election.ClientOf(cs[1].ex, cs[1].e).Leader(ctx); err != nil || string(who) != "0" {
		t.Fatalf("Leader = %q %v", who, err)
	}
	prev := l0
	closeLeader := cs[0].close
	for next := 1; next < 3; next++ {
		closeLeader()
		select {
		case <-prev.Done():
		case <-ctx.Done():
			t.Fatal("closed leader never told")
		}
		if !errors.Is(prev.Err(), election.ErrLost) {
			t.Errorf("closed leader's Err = %v", prev.Err())
		}
		var l *election.Leadership
		select {
		case l = <-won[next]:
		case <-ctx.Done():
			t.Fatalf("candidate %d never elected", next)
		}
		if l == nil {
			t.FailNow()
		}
		if l.Token() <= prev.Token() || !l.IsLeader() {
			t.Fatalf("candidate %d: token %d after %d, leader %v", next, l.Token(), prev.Token(), l.IsLeader())
		}
		if next == 1 {
			select {
			case l2 := <-won[2]:
				t.Fatalf("candidate 2 elected while 1 leads: %v", l2 != nil)
			default:
			}
		}
		prev, closeLeader = l, cs[next].close
	}
	if err := election.ClientOf(cs[2].ex, nil).Resign(ctx, prev); err != nil { // the last leader: candidate 2
		t.Fatal(err)
	}
}

// Four candidates loop (campaign, fenced log writes, resign) on a
// 3-server ensemble whose leader server is killed mid-run and restarted.
// The judge is the log written through Fenced: in the server's order the
// entries' tokens never go down (two leaders never interleave) and each
// term's entries are together; acting intervals (wall clock, one process)
// never overlap.
func TestRealEnsembleServerKilled(t *testing.T) {
	zkserver.Require(t)
	ens := zkserver.Ensemble(t, 3, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	root := fmt.Sprintf("/real-election-ens-%d", time.Now().UnixNano())
	dir, logDir := root+"/candidates", root+"/log"
	setup, _ := realClient(t, ctx, ens.Addrs(), 6*time.Second)
	if _, err := executor.Await(ctx, setup, task.Create(root, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(ctx, setup, task.Create(logDir, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		terms   []*term
		byL     = map[*election.Leadership]*term{}
		total   int
		killed  = -1
		kill    sync.Once
		restart = make(chan error, 1)
		wg      sync.WaitGroup
		lost    int
		after   int // entries written after the kill
	)
	const clients, rounds = 4, 5
	onState := func(i int) func(*election.Leadership, election.State) {
		return func(l *election.Leadership, st election.State) {
			mu.Lock()
			defer mu.Unlock()
			switch st {
			case election.Leading:
				if byL[l] == nil {
					tm := &term{client: i, token: l.Token(), start: time.Now()}
					byL[l] = tm
					terms = append(terms, tm)
				}
			case election.Ended:
				if tm := byL[l]; tm != nil {
					tm.end, tm.ended = time.Now(), true
				}
			}
		}
	}
	errs := make([]error, clients)
	for i := range clients {
		ex, _ := realClient(t, ctx, ens.Addrs(), 6*time.Second)
		e, err := election.New(dir, election.WithOnState(onState(i)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < rounds; {
				l, err := election.ClientOf(ex, e).Campaign(ctx)
				if err != nil {
					if ctx.Err() != nil {
						errs[i] = err
						return
					}
					continue // session expired, node lost, ...: campaign again
				}
				ok := true
				for k := range 4 {
					kind := []string{"enter", "work", "work", "exit"}[k]
					_, err := executor.Await(ctx, ex, l.Fenced(&task.CreateRequest{
						Path: fmt.Sprintf("%s/t%d-%s-", logDir, l.Token(), kind), Mode: task.PersistentSequential}))
					if err != nil {
						ok = false
						break
					}
					mu.Lock()
					total++
					if killed >= 0 {
						after++
					}
					if total == clients*rounds {
						kill.Do(func() {
							killed = ens.Leader(ctx)
							if killed < 0 {
								killed = 1
							}
							ens.Kill(killed)
							go func() { restart <- ens.Restart(ctx, killed) }()
						})
					}
					mu.Unlock()
				}
				if !ok {
					mu.Lock()
					lost++
					mu.Unlock()
				}
				_ = election.ClientOf(ex, nil).Resign(ctx, l)
				done++
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if killed < 0 {
		t.Fatal("no server was killed")
	}
	if err := <-restart; err != nil {
		t.Fatalf("restart server %d: %v", killed, err)
	}
	cl, err := executor.Await(ctx, setup, task.Children(logDir))
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		seq, token int64
		kind       string
	}
	var log []entry
	for _, n := range cl.Names {
		parts := strings.Split(strings.TrimPrefix(n, "t"), "-")
		tok, err1 := strconv.ParseInt(parts[0], 10, 64)
		sq, err2 := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if len(parts) != 3 || err1 != nil || err2 != nil {
			t.Fatalf("log entry %q", n)
		}
		log = append(log, entry{sq, tok, parts[1]})
	}
	slices.SortFunc(log, func(a, b entry) int { return int(a.seq - b.seq) })
	seen := map[int64]bool{}
	for k, en := range log {
		if k > 0 && en.token != log[k-1].token {
			if en.token < log[k-1].token || seen[en.token] {
				t.Fatalf("fenced writes interleave: token %d after %d (entry %d)", en.token, log[k-1].token, en.seq)
			}
			seen[log[k-1].token] = true
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(terms, func(a, b *term) int { return a.start.Compare(b.start) })
	for k := 1; k < len(terms); k++ {
		a, b := terms[k-1], terms[k]
		if !a.ended || a.end.After(b.start) {
			t.Fatalf("two acting leaders: client %d (token %d) and client %d (token %d)", a.client, a.token, b.client, b.token)
		}
	}
	if after == 0 {
		t.Fatal("no fenced write after the kill")
	}
	t.Logf("%d terms, %d log entries, server %d (the ensemble's leader) killed after %d entries, %d written after, %d terms cut short by a refused or failed write",
		len(terms), len(log), killed, clients*rounds, after, lost)
}

// childrenOf counts dir's children.
func childrenOf(dir string) task.Task[int] {
	return combinators.Map(task.Children(dir), func(cl task.ChildList) int { return len(cl.Names) })
}

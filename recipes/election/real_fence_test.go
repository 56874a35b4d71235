package election_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// holdConn is a real session whose client loses replies and notifications
// on the test's cue: the request goes to the server (and is applied
// there), but the client hears of it only when the test releases it.
type holdConn struct {
	*zkadapter.Conn
	path string

	mu       sync.Mutex
	loseDel  bool          // the next delete of path: reply lost
	lost     chan struct{} // closed once that delete's reply arrived (applied)
	holdWch  bool          // notifications on path: held
	release  chan struct{} // closed by Release: held deliveries go on
	once     sync.Once
	releases sync.WaitGroup
	stopped  bool // under mu: the test has ended; later runs fn at once
}

// Release lets every held delivery go on, now and from now on.
func (c *holdConn) Release() { c.once.Do(func() { close(c.release) }) }

func newHoldConn(c *zkadapter.Conn, path string) *holdConn {
	return &holdConn{Conn: c, path: path, lost: make(chan struct{}), release: make(chan struct{})}
}

func (c *holdConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.mu.Lock()
	lose := c.loseDel && sim.Deletes(c.path)(req)
	if lose {
		c.loseDel = false
	}
	hold := c.holdWch && watch != nil && req.NodePath() == c.path
	c.mu.Unlock()
	if lose {
		inner := done
		done = func(resp task.Response) {
			close(c.lost)
			c.later(func() { inner(task.Response{Err: task.ErrConnectionLoss}) })
		}
	}
	if hold {
		inner := watch
		watch = func(ev task.Event) { c.later(func() { inner(ev) }) }
	}
	c.Conn.Do(req, done, watch)
}

// later runs fn once the test releases held deliveries.
func (c *holdConn) later(fn func()) {
	c.mu.Lock()
	if c.stopped { // no Add while Wait may run (sync.WaitGroup's rule)
		c.mu.Unlock()
		fn()
		return
	}
	c.releases.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.releases.Done()
		<-c.release
		fn()
	}()
}

func holdingClient(t *testing.T, ctx context.Context, addrs []string, path string) (*executor.Executor, *holdConn) {
	t.Helper()
	conn, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: addrs, SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hc := newHoldConn(conn, path)
	ex, err := executor.New(executor.Config{Conn: hc})
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(context.Background()) }()
	t.Cleanup(func() {
		hc.mu.Lock()
		hc.stopped = true
		hc.mu.Unlock()
		hc.Release()
		hc.releases.Wait()
		ex.Close()
		<-done
	})
	return ex, hc
}

// The two broken promises of a fixed master path, on a real 3-server
// ensemble: a resign whose delete reply is lost must not delete the next
// master's node when it is retried, and a deposed master that has not
// heard of its loss must have its fenced write refused by ZooKeeper.
func TestRealEnsembleMasterIncarnations(t *testing.T) {
	zkserver.Require(t)
	ens := zkserver.Ensemble(t, 3, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	root := fmt.Sprintf("/real-master-fence-%d", time.Now().UnixNano())
	path := root + "/master"
	op, _ := realClient(t, ctx, ens.Addrs(), 6*time.Second) // the operator
	if _, err := executor.Await(ctx, op, task.Create(root, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	master := func(who string) *election.Master {
		m, err := election.NewMaster(path, election.WithData([]byte(who)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	owner := func() int64 {
		st, err := executor.Await(ctx, op, task.Exists(path))
		if err != nil {
			t.Fatal(err)
		}
		if st == nil {
			return 0
		}
		return st.EphemeralOwner
	}

	t.Run("resign-lost-reply", func(t *testing.T) {
		exA, a := holdingClient(t, ctx, ens.Addrs(), path)
		exB, _ := realClient(t, ctx, ens.Addrs(), 6*time.Second)
		exC, _ := realClient(t, ctx, ens.Addrs(), 6*time.Second)
		la, err := election.ClientOf(exA, master("a")).Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bDone := campaignAsync(t, ctx, exB, master("b"))
		a.mu.Lock()
		a.loseDel = true
		a.mu.Unlock()
		resigned := make(chan error, 1)
		go func() { _, err := executor.Await(ctx, exA, la.Resign()); resigned <- err }()
		<-a.lost // applied at the server; a has not heard
		lb := <-bDone
		if lb == nil {
			t.FailNow()
		}
		a.Release() // a hears "connection loss" and retries
		if err := <-resigned; err != nil {
			t.Fatalf("resign: %v", err)
		}
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		defer ccancel()
		if lc, err := election.ClientOf(exC, master("c")).Campaign(cctx); err == nil {
			t.Fatalf("c leads (token %d) beside b (token %d, err %v)", lc.Token(), lb.Token(), lb.Err())
		}
		if got := owner(); got != lb.Session().ID || lb.Err() != nil {
			t.Fatalf("master node owned by %#x, b's session %#x, b's leadership %v", got, lb.Session().ID, lb.Err())
		}
		if _, err := executor.Await(ctx, exB, lb.Resign()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deposed-fenced-write", func(t *testing.T) {
		// a must not hear of its loss before its write. Under heavy load
		// its connection can drop, and the read its reconnect makes tells
		// it of the delete: such a run shows nothing, so the scenario is
		// run again, at most 3 times in all.
		try := func() bool {
			exA, a := holdingClient(t, ctx, ens.Addrs(), path)
			exB, _ := realClient(t, ctx, ens.Addrs(), 6*time.Second)
			a.mu.Lock()
			a.holdWch = true // a will not hear its node go
			a.mu.Unlock()
			la, err := election.ClientOf(exA, master("a")).Campaign(ctx)
			if err != nil {
				t.Fatal(err)
			}
			bDone := campaignAsync(t, ctx, exB, master("b"))
			if _, err := executor.Await(ctx, op, task.Delete(path, task.AnyVersion)); err != nil {
				t.Fatal(err) // the operator deletes a's node
			}
			lb := <-bDone
			if lb == nil {
				t.FailNow()
			}
			if la.Err() != nil {
				t.Logf("a heard of its loss before its write (%v): running the scenario again", la.Err())
				if _, err := executor.Await(ctx, exB, lb.Resign()); err != nil {
					t.Fatal(err)
				}
				return false
			}
			late := root + "/late"
			_, err = executor.Await(ctx, exA, la.Fenced(&task.CreateRequest{Path: late, Mode: task.Persistent}))
			if !errors.Is(err, election.ErrLost) {
				t.Errorf("deposed master's fenced write: %v, want ErrLost", err)
			}
			if st, err := executor.Await(ctx, op, task.Exists(late)); err != nil || st != nil {
				t.Fatalf("deposed master's fenced write applied while b leads: %+v %v", st, err)
			}
			if _, err := executor.Await(ctx, exB, lb.Resign()); err != nil {
				t.Fatal(err)
			}
			return true
		}
		for attempt := 1; !try(); attempt++ {
			if attempt == 3 {
				t.Fatal("a heard of its loss before its write in each of 3 runs")
			}
		}
	})
}

// campaignAsync campaigns for m on ex on a goroutine of its own and hands
// back the leadership (nil, the error reported, if the campaign failed).
func campaignAsync(t *testing.T, ctx context.Context, ex *executor.Executor, m *election.Master) <-chan *election.Leadership {
	done := make(chan *election.Leadership, 1)
	go func() {
		l, err := election.ClientOf(ex, m).Campaign(ctx)
		if err != nil {
			t.Errorf("campaign for %s: %v", m.Path(), err)
		}
		done <- l
	}()
	return done
}

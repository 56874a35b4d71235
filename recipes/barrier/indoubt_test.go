package barrier_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// doubtConn is process 0's connection in TestEnterAfterCanceledEnter. It
// cuts the connection (a partition) just after the first participant
// create is sent, the create applied and its reply lost; once armed, it
// holds the next listing of dir (the cleanup's) until release, so that
// the cleanup is known to be under way; and it notes every participant
// create it sends while a participant node of its own session is there
// (a second node of one session: it would count twice).
type doubtConn struct {
	*fakezk.Conn
	srv *fakezk.Server
	dir string

	cut  chan struct{} // closed once the first create is sent and cut
	held chan struct{} // closed once the armed listing is held

	mu      sync.Mutex
	created bool
	armed   bool
	hold    func() // sends the held listing on; executor goroutine only
	synced  func() // sends the held sync in front of the listing on
	twice   []string
}

func (c *doubtConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	switch r := req.(type) {
	case *task.CreateRequest:
		if strings.HasPrefix(r.Path, c.dir+"/_p_") {
			c.noteSecond()
			c.mu.Lock()
			first := !c.created
			c.created = true
			c.mu.Unlock()
			if !first {
				c.Conn.Do(req, done, watch)
				return
			}
			// Applied, and its reply never reaches the executor.
			c.Conn.Do(req, func(task.Response) {}, watch)
			c.srv.Partition(c.Conn, time.Second, true)
			close(c.cut)
			return
		}
	case *task.SyncRequest:
		// The sync the listing follows (zkops.Prefixed) is held with it.
		c.mu.Lock()
		if c.armed && r.Path == c.dir {
			c.synced = func() { c.Conn.Do(req, done, watch) }
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	case *task.GetChildrenRequest:
		c.mu.Lock()
		if c.armed && r.Path == c.dir {
			c.armed = false
			synced := c.synced
			c.hold = func() {
				if synced != nil {
					synced()
				}
				c.Conn.Do(req, done, watch)
			}
			c.mu.Unlock()
			close(c.held)
			return
		}
		c.mu.Unlock()
	}
	c.Conn.Do(req, done, watch)
}

// noteSecond notes a participant create sent while a participant node of
// this session is there.
func (c *doubtConn) noteSecond() {
	names, _ := c.srv.Children(c.dir)
	for _, n := range names {
		if !strings.HasPrefix(n, "_p_") {
			continue
		}
		if st, ok := c.srv.NodeStat(c.dir + "/" + n); ok && st.EphemeralOwner == c.SessionID() {
			c.mu.Lock()
			c.twice = append(c.twice, n)
			c.mu.Unlock()
		}
	}
}

func (c *doubtConn) arm() {
	c.mu.Lock()
	c.armed = true
	c.mu.Unlock()
}

func (c *doubtConn) seconds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.twice...)
}

// An Enter whose context ends while its create is in doubt (applied, the
// reply lost with the connection) returns at once; its cleanup deletes
// the node once the connection is back. A later Enter on the same
// DoubleClient waits for that cleanup, within its own ctx: it never
// creates a second node of the session while the first is there, so the
// session never counts twice (with Size 2, the stale node and the new one
// would let one process through alone).
func TestEnterAfterCanceledEnter(t *testing.T) {
	const dir = "/app/doubt"
	srv := fakezk.New(fakezk.Config{Async: true, Clock: fakezk.NewClock(time.Time{})}) // the test heals the partition
	defer srv.Close()
	conn := &doubtConn{Conn: srv.Connect(fakezk.ConnConfig{}), srv: srv, dir: dir, cut: make(chan struct{}), held: make(chan struct{})}
	run, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	start := func(c task.Conn, seed uint64) *executor.Executor {
		ex, err := executor.New(executor.Config{Conn: c, Clock: srv.Clock(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(run) }()
		return ex
	}
	ex0 := start(conn, 1)
	ex1 := start(srv.Connect(fakezk.ConnConfig{}), 2)
	defer func() { stop(); running.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a failure bound
	defer cancel()
	for _, p := range []string{"/app", dir} { // so that the lost create makes a node
		if _, err := ex1.Create(ctx, p, nil, task.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	d0, _ := barrier.NewDoubleClient(ex0, dir, 2)
	d1, _ := barrier.NewDoubleClient(ex1, dir, 2)

	// The first Enter: its create applied, the reply lost; its context
	// ends while the connection is down.
	ctx1, cancel1 := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { _, err := d0.Enter(ctx1); first <- err }()
	select {
	case <-conn.cut:
	case <-ctx.Done():
		t.Fatal("the first create was never sent")
	}
	conn.arm()
	cancel1()
	if err := <-first; !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("first Enter = %v, want task.ErrCanceled", err)
	}
	srv.Clock().(*fakezk.Clock).Advance(time.Second) // the partition heals: the cleanup lists the directory
	select {
	case <-conn.held:
	case <-ctx.Done():
		t.Fatal("the cleanup never listed the directory")
	}
	if n := len(participants(srv, dir)); n != 1 {
		t.Fatalf("%d participant nodes, want the lost create's", n)
	}

	// The cleanup is under way (its listing held): a second Enter waits
	// for it until its context ends, and creates nothing meanwhile.
	ctx2, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	p, err := d0.Enter(ctx2)
	cancel2()
	if err == nil {
		t.Errorf("second Enter passed a barrier of 2 alone, as %s, beside %v", p.Path(), participants(srv, dir))
	} else if !errors.Is(err, task.ErrDeadlineExceeded) {
		t.Errorf("second Enter = %v, want task.ErrDeadlineExceeded", err)
	}
	if _, err := executor.Await(ctx, ex0, task.Func(func(*task.Scope) (task.Unit, error) {
		conn.mu.Lock()
		hold := conn.hold
		conn.mu.Unlock()
		hold()
		return task.Unit{}, nil
	})); err != nil {
		t.Fatal(err)
	}

	// Once the cleanup is done, both processes enter, one node each.
	var wg sync.WaitGroup
	ps := make([]*barrier.Participant, 2)
	errs := make([]error, 2)
	for i, d := range []*barrier.DoubleClient{d0, d1} {
		wg.Add(1)
		go func() { defer wg.Done(); ps[i], errs[i] = d.Enter(ctx) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: Enter = %v", i, err)
		}
	}
	owners := map[int64]string{}
	for _, n := range participants(srv, dir) {
		st, _ := srv.NodeStat(dir + "/" + n)
		if other, dup := owners[st.EphemeralOwner]; dup {
			t.Errorf("session %#x has two participant nodes, %s and %s", st.EphemeralOwner, other, n)
		}
		owners[st.EphemeralOwner] = n
	}
	if s := conn.seconds(); len(s) > 0 {
		t.Errorf("a participant create was sent while the session's node %v was there", s)
	}
	for i, d := range []*barrier.DoubleClient{d0, d1} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = d.Leave(ctx, ps[i]) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("process %d: Leave = %v", i, err)
		}
	}
	if left := participants(srv, dir); len(left) > 0 {
		t.Errorf("participant nodes left after both Leaves: %v", left)
	}
}

func participants(srv *fakezk.Server, dir string) []string {
	names, _ := srv.Children(dir)
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "_p_") {
			out = append(out, n)
		}
	}
	return out
}

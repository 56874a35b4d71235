package fakezk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// The README's task chain, with fakezk.New(fakezk.Config{}) standing in for
// zkadapter.Dial: a zero Config server runs on the wall clock, so a 1 s
// partition heals after a second of real time and the chain, waiting for
// the reconnect, succeeds well within its context.
func TestReadmeChainPartitionHeals(t *testing.T) {
	ensure := c.OnError(task.Create("/counter", []byte("0"), task.Persistent),
		func(error) task.Task[string] { return task.Value("/counter") }, task.ErrNodeExists)
	readmePartitionHeals(t, c.Then(ensure, func(p string) task.Task[task.Data] { return task.Get(p) }))
}

// The README's flow, the same steps in straight lines, through the same
// partition.
func TestReadmeFlowPartitionHeals(t *testing.T) {
	readmePartitionHeals(t, task.Flow(func(f *task.F) (task.Data, error) {
		_, err := task.Await(f, task.Create("/counter", []byte("0"), task.Persistent))
		if err != nil && !errors.Is(err, task.ErrNodeExists) {
			return task.Data{}, err
		}
		return task.Await(f, task.Get("/counter"))
	}))
}

func readmePartitionHeals(t *testing.T, read task.Task[task.Data]) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{})
	ex, err := executor.New(executor.Config{Conn: conn})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- ex.Run(runCtx) }()
	defer func() { stop(); <-ran }()

	if _, err := executor.Await(ctx, ex, read); err != nil {
		t.Fatalf("before the partition: %v", err)
	}

	wall := task.RealClock()
	start := wall.Now()
	srv.Partition(conn, time.Second, false)
	data, err := executor.Await(ctx, ex, c.Retry(read, c.Policy{Attempts: 5}))
	if err != nil {
		t.Fatalf("after a 1 s partition: %v (waited %v)", err, wall.Now().Sub(start))
	}
	if string(data.Data) != "0" {
		t.Fatalf("read %q, want 0", data.Data)
	}
	// The chain waited for the heal: the partition was real.
	if waited := wall.Now().Sub(start); waited < time.Second {
		t.Fatalf("the chain succeeded after %v, before the partition healed", waited)
	}
}

// A zero Config server is on the wall clock; a deterministic one with no
// Clock is on a simulated clock at Epoch, as simulations expect.
func TestDefaultClocks(t *testing.T) {
	auto := fakezk.New(fakezk.Config{})
	defer auto.Close()
	if _, sim := auto.Clock().(*fakezk.Clock); sim {
		t.Fatal("a zero Config server is on a simulated clock")
	}
	if d := task.RealClock().Now().Sub(auto.Clock().Now()); d < -time.Minute || d > time.Minute {
		t.Fatalf("a zero Config server's clock is %v off the wall clock", d)
	}
	det := fakezk.New(fakezk.Config{Deterministic: true})
	defer det.Close()
	clk, sim := det.Clock().(*fakezk.Clock)
	if !sim || !clk.Now().Equal(fakezk.Epoch) {
		t.Fatalf("a deterministic server's default clock: %T at %v", det.Clock(), det.Clock().Now())
	}
}

// An executor given a fakezk Conn and no Clock runs on the server's clock:
// a simulated server drives its executor's timers, and a flow's sleep ends
// when the test advances that one clock. An executor's own Clock wins.
func TestExecutorTakesServerClock(t *testing.T) {
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Clock: clk})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Shutdown()
	if ex.Clock() != task.Clock(clk) {
		t.Fatalf("executor clock %T, want the server's", ex.Clock())
	}
	var slept, calls int
	executor.Submit(ex, c.Then(c.Sleep(5*time.Second), func(struct{}) task.Task[task.Data] { return task.Get("/") }),
		func(_ task.Data, err error) {
			calls++
			if err == nil {
				slept++
			}
		})
	ex.RunUntilIdle()
	clk.Advance(5*time.Second - time.Millisecond)
	ex.RunUntilIdle()
	if calls != 0 {
		t.Fatal("the sleep ended before the server's clock reached it")
	}
	clk.Advance(time.Millisecond)
	ex.RunUntilIdle()
	if calls != 1 || slept != 1 {
		t.Fatalf("after the server's clock passed the sleep: %d calls, %d ok", calls, slept)
	}

	own := fakezk.NewClock(time.Time{})
	ex2, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: own})
	if err != nil {
		t.Fatal(err)
	}
	defer ex2.Shutdown()
	if ex2.Clock() != task.Clock(own) {
		t.Fatal("an executor's own Clock was not kept")
	}
}

// On the wall clock a session also expires in real time: partitioned for
// longer than its timeout, it is gone when the partition heals, its
// ephemeral node with it, and the client goes on in a new session.
func TestZeroClockSessionExpiresInRealTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := fakezk.New(fakezk.Config{TickTime: 50 * time.Millisecond})
	defer srv.Close()
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 100 * time.Millisecond})
	ex, err := executor.New(executor.Config{Conn: conn})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- ex.Run(runCtx) }()
	defer func() { stop(); <-ran }()

	if _, err := executor.Await(ctx, ex, task.Create("/mine", nil, task.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	before := conn.SessionID()
	srv.Partition(conn, 300*time.Millisecond, false)
	// Submitted while the session is suspended, the read runs once the
	// client is back: in a new session, the old one having expired.
	if _, err := executor.AwaitAcrossExpiry(ctx, ex, task.Get("/mine")); !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("the old session's ephemeral after the partition: %v, want ErrNoNode", err)
	}
	if after := conn.SessionID(); after == before || after == 0 {
		t.Fatalf("session %#x after the expiry of %#x", after, before)
	}
}

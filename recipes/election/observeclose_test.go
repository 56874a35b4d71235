package election_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// Client.Observe closes its channel once executor.Await(o.Stop()) returns.
// When the executor is stopping (Run's ctx, the same root ctx the caller
// gave Observe, has ended) Await is refused at once with ErrClosed, while
// the executor goroutine may still be in the job that delivers an
// observation: send on a closed channel panics, crashing the process.
// Here the executor goroutine is held (Observer.OnQueues) just before the
// job that carries the reply of the observer's read of a new candidate.
func TestObserveClosesItsChannelUnderADelivery(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	const dir = "/app/obs"
	var armed, readSent atomic.Bool
	blocked, release := make(chan struct{}), make(chan struct{})
	obsv := &task.Observer{
		OnOpStart: func(op task.OpInfo) any {
			if armed.Load() && strings.HasPrefix(op.Req.NodePath(), dir+"/") {
				readSent.Store(true)
			}
			return nil
		},
		OnQueues: func(task.QueueDepths) {
			if armed.Load() && readSent.Load() {
				armed.Store(false)
				close(blocked)
				<-release
			}
		},
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	ex0, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1, Observer: obsv})
	if err != nil {
		t.Fatal(err)
	}
	ex1, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	d0, d1 := make(chan struct{}), make(chan struct{})
	go func() { defer close(d0); _ = ex0.Run(runCtx) }()
	go func() { defer close(d1); _ = ex1.Run(context.Background()) }()
	defer func() { ex1.Close(); <-d1 }()

	e, _ := election.New(dir, election.WithData([]byte("x")))
	obs, err := election.ClientOf(ex0, e).Observe(runCtx) // one root ctx, as a program's main has it
	if err != nil {
		t.Fatal(err)
	}
	if ob := <-obs; ob.Leading {
		t.Fatalf("first observation %+v", ob)
	}
	armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := election.ClientOf(ex1, e).Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-blocked:
	case <-ctx.Done():
		t.Fatal("never blocked")
	}
	cancelRun() // the program stops: Run's ctx and Observe's ctx end together
	for range obs {
	} // the observe goroutine closes the channel: its Stop was refused
	t.Log("channel closed while the executor is inside its next job")
	close(release)
	<-d0
	t.Log("executor stopped without a panic")
}

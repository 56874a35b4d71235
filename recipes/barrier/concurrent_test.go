package barrier_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// Client: "its methods are safe from any goroutine"; the package doc: "one
// DoubleClient never has two participant nodes at once". Eight goroutines
// share one DoubleClient of a barrier for 1 and one Client, on real
// goroutines: each loops Enter and Leave, and Set, Wait and Remove, with
// contexts that have ended before the call, end while it runs (canceled
// by another goroutine) or do not. Judged from the server's journal: the
// session never has two participant nodes at once; no call returns an
// error but its ctx's, or, for an Enter, task.ErrInvalidArgument (the
// DoubleClient is inside); once all are done, a last Enter and Leave
// leave no participant node, and a last Remove the barrier down. Holds;
// run it with -race.
func TestOneClientFromManyGoroutines(t *testing.T) {
	o := &twoOfOne{dir: "/conc/round", nodes: map[string]int64{}}
	var mu sync.Mutex // o is read by the journal under the server's lock; at the end under mu too
	srv := fakezk.New(fakezk.Config{Async: true, Journal: func(c fakezk.Commit) { mu.Lock(); o.journal(c); mu.Unlock() }})
	defer srv.Close()
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()
	bound, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a failure bound
	defer cancel()

	d, _ := barrier.NewDoubleClient(ex, "/conc/round", 1)
	g, _ := barrier.NewClient(ex, "/conc/gate")
	ctxErr := func(err error) bool {
		return errors.Is(err, task.ErrCanceled) || errors.Is(err, task.ErrDeadlineExceeded)
	}
	var wg sync.WaitGroup
	var entered, refused, ended atomic.Int64
	errs := make(chan error, 1000)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(i), 7))
			mk := func() (context.Context, context.CancelFunc) {
				ctx, c := context.WithCancel(bound)
				switch rnd.IntN(3) {
				case 0:
					c() // ended before the call
				case 1:
					spins, pause := rnd.IntN(200), time.Duration(rnd.IntN(20))*time.Microsecond
					go func() { // ends while the call runs, or just after
						for range spins {
							if ctx.Err() != nil {
								return
							}
							time.Sleep(pause)
						}
						c()
					}()
				}
				return ctx, c
			}
			for range 40 {
				ctx, c := mk()
				p, err := d.Enter(ctx)
				switch {
				case err == nil:
					entered.Add(1)
					lctx, lc := mk()
					if err := d.Leave(lctx, p); err != nil && !ctxErr(err) {
						errs <- err
					}
					lc()
				case errors.Is(err, task.ErrInvalidArgument):
					refused.Add(1)
				case ctxErr(err):
					ended.Add(1)
				default:
					errs <- err
				}
				c()
				ctx, c = mk()
				var gerr error
				switch rnd.IntN(3) {
				case 0:
					gerr = g.Set(ctx, nil)
				case 1:
					gerr = g.Remove(ctx)
				case 2:
					short, sc := context.WithTimeout(ctx, time.Millisecond)
					gerr = g.Wait(short)
					sc()
				}
				if gerr != nil && !ctxErr(gerr) {
					errs <- gerr
				}
				c()
			}
		}()
	}
	wg.Wait()
	close(errs)
	t.Logf("Enters: %d passed, %d refused (the Client inside), %d ended by their ctx", entered.Load(), refused.Load(), ended.Load())
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	p, err := d.Enter(bound)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Leave(bound, p); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(bound); err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(bound, ex, task.Sync("/conc")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if o.most > 1 {
		t.Errorf("the session had %d participant nodes in %s at once", o.most, o.dir)
	}
	if len(o.nodes) > 0 {
		t.Errorf("participant nodes left: %v", o.nodes)
	}
	if _, up := srv.NodeStat("/conc/gate"); up {
		t.Error("the barrier is up after the last Remove")
	}
}

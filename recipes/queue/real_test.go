package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

var realOpts = zkserver.Options{MaxSessionTimeout: 10 * time.Second}

func clients(t *testing.T, ctx context.Context, addrs []string, dir string, n int, opts ...queue.Option) ([]*queue.Client, []*realtest.Client) {
	t.Helper()
	var cs []*queue.Client
	var rs []*realtest.Client
	for range n {
		rc := realtest.Dial(t, ctx, addrs, realtest.Options{SessionTimeout: 4 * time.Second})
		c, err := queue.NewClient(rc.Ex, dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
		rs = append(rs, rc)
	}
	return cs, rs
}

// On a real server, per mode: 3 producers put 40 items each while 3
// consumers take (and, at-least-once, acknowledge) them; every item is
// taken exactly once, and the queue and the in-flight directory end
// empty.
func TestRealExactlyOnceWithoutFaults(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, realOpts)
	for _, mode := range []queue.Mode{queue.AtMostOnce, queue.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir := "/real-" + mode.String()
			const producers, consumers, each = 3, 3, 40
			ps, _ := clients(t, ctx, srv.Addrs(), dir, producers, queue.WithMode(mode))
			cs, _ := clients(t, ctx, srv.Addrs(), dir, consumers, queue.WithMode(mode))
			var mu sync.Mutex
			seen := map[string]int{}
			var wg sync.WaitGroup
			errs := make(chan error, producers+consumers)
			for i, p := range ps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range each {
						if _, err := p.PutPriority(ctx, fmt.Appendf(nil, "p%d-%d", i, j), j%3-1); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			total := 0
			for _, c := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						mu.Lock()
						if total == producers*each {
							mu.Unlock()
							return
						}
						total++
						mu.Unlock()
						it, err := c.Take(ctx)
						if err != nil {
							errs <- err
							return
						}
						if mode == queue.AtLeastOnce {
							if err := c.Ack(ctx, it); err != nil {
								errs <- err
								return
							}
						}
						mu.Lock()
						seen[string(it.Data)]++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for i := range producers {
				for j := range each {
					if n := seen[fmt.Sprintf("p%d-%d", i, j)]; n != 1 {
						t.Errorf("p%d-%d taken %d times", i, j, n)
					}
				}
			}
			admin := cs[0].Executor()
			for _, d := range []string{dir, dir + ".inflight"} {
				cl, err := executor.Await(ctx, admin, task.Children(d))
				if err != nil && !errors.Is(err, task.ErrNoNode) {
					t.Fatal(err)
				}
				if len(cl.Names) != 0 {
					t.Errorf("left in %s: %v", d, cl.Names)
				}
			}
		})
	}
}

// At-least-once on a real server: a consumer takes an item and its
// session ends (closed) before it acknowledges; a consumer waiting on the
// empty queue is woken by the marker's deletion, returns the item (the
// multi that creates and deletes the dead consumer's marker runs on the
// real server) and takes it, under its own name; nothing is left in
// flight after its ack.
func TestRealReturnOnSessionEnd(t *testing.T) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const dir = "/real-return"
	cs, rs := clients(t, ctx, srv.Addrs(), dir, 2, queue.WithMode(queue.AtLeastOnce))
	name, err := cs[0].Put(ctx, []byte("job"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := cs[0].Take(ctx)
	if err != nil || string(first.Data) != "job" {
		t.Fatalf("take: %v %v", first, err)
	}
	got := make(chan *queue.Item, 1)
	fail := make(chan error, 1)
	go func() {
		it, err := cs[1].Take(ctx)
		if err != nil {
			fail <- err
			return
		}
		got <- it
	}()
	rs[0].Stop() // the session ends with the item in flight
	select {
	case it := <-got:
		if string(it.Data) != "job" || it.Name != name {
			t.Fatalf("second delivery %s %q, want %s job", it.Name, it.Data, name)
		}
		if err := cs[1].Ack(ctx, it); err != nil {
			t.Fatal(err)
		}
	case err := <-fail:
		t.Fatal(err)
	}
	cl, err := executor.Await(ctx, cs[1].Executor(), task.Children(dir+".inflight"))
	if err != nil || len(cl.Names) != 0 {
		t.Fatalf("in flight after the ack: %v (%v)", cl.Names, err)
	}
}

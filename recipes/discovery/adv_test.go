package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// The project's standard: "Bad input gets a clear typed error within a
// stated time, never a panic." WithRand's fn should draw in [0, n); one
// that draws outside it (an off-by-one, a rand.Int63 passed as is) makes
// Get index out of range.
func TestAdvProviderRandOutOfRange(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	ins := []discovery.Instance{{Name: "s", ID: "a"}, {Name: "s", ID: "b"}}
	for _, draw := range []int{2, -1} {
		p, err := discovery.NewProvider(func() []discovery.Instance { return ins }, w.Clock,
			discovery.WithStrategy(discovery.Random), discovery.WithRand(func(int) int { return draw }))
		if err != nil {
			t.Fatal(err)
		}
		got, err := func() (in discovery.Instance, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return p.Get()
		}()
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("Get with a Rand that draws %d of 2 = %v, %v; want an error wrapping ErrInvalidArgument", draw, got.ID, err)
		}
	}
}

// holdOne holds, unsent, the first request hold matches and every
// request after it, until release sends them in order: the session's
// order is kept, as when a request is slow on the wire.
type holdOne struct {
	task.Conn
	mu      sync.Mutex
	hold    func(task.Request) bool
	held    []func()
	holding bool
	heldNow chan struct{}
}

func (c *holdOne) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.mu.Lock()
	if c.holding || c.hold != nil && c.hold(req) {
		c.hold = nil
		first := !c.holding
		c.holding = true
		c.held = append(c.held, func() { c.Conn.Do(req, done, watch) })
		c.mu.Unlock()
		if first {
			close(c.heldNow)
		}
		return
	}
	c.mu.Unlock()
	c.Conn.Do(req, done, watch)
}

func (c *holdOne) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.held {
		f()
	}
	c.held, c.holding = nil, false
}

// Client.Register's doc: "If ctx ends first, a Dynamic instance's node
// the flow made is deleted; a Static or Permanent one's may stay". The
// instance's create is in flight when ctx ends: Register returns ctx's
// error and the create is applied after. A Dynamic instance's node is
// deleted; a Static one's, if it stayed, goes with Register then
// Unregister, as the doc says.
func TestAdvRegisterCanceled(t *testing.T) {
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
		t.Run(string(typ), func(t *testing.T) { registerCanceled(t, typ) })
	}
}

func registerCanceled(t *testing.T, typ discovery.ServiceType) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	const path = "/services/web/s1"
	hc := &holdOne{Conn: srv.Connect(fakezk.ConnConfig{}), heldNow: make(chan struct{}), hold: func(r task.Request) bool {
		cr, ok := r.(*task.CreateRequest)
		return ok && cr.Path == path
	}}
	bg, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	ex, _ := executor.New(executor.Config{Conn: hc, Clock: srv.Clock(), Seed: 1})
	running.Add(1)
	go func() { defer running.Done(); _ = ex.Run(bg) }()
	defer ex.Close()
	c, _ := discovery.NewClient(ex, "/services")
	// The service's directory first, so that the instance's create is the
	// request held.
	if _, err := c.Register(bg, discovery.Instance{Name: "web", ID: "other", ServiceType: discovery.Static}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Register(ctx, discovery.Instance{Name: "web", ID: "s1", ServiceType: typ})
		errc <- err
	}()
	<-hc.heldNow
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Register canceled while its create is in flight = %v", err)
	}
	hc.release()
	// Two reads in turn on the same session: the create, and any delete
	// sent on its reply, are applied before the second one.
	for range 2 {
		if _, err := c.Query(bg, "web"); err != nil {
			t.Fatal(err)
		}
	}
	_, left := srv.NodeStat(path)
	if typ == discovery.Dynamic {
		if left {
			t.Fatalf("%s exists after a Register that returned its context's error", path)
		}
		return
	}
	// A Static node may stay (Register's doc); registering it again and
	// unregistering removes it.
	if !left {
		return
	}
	r, err := c.Register(bg, discovery.Instance{Name: "web", ID: "s1", ServiceType: typ})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unregister(bg, r); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.NodeStat(path); ok {
		t.Fatalf("%s exists after Register and Unregister", path)
	}
}

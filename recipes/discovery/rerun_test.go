package discovery_test

// A task is a description: "running it twice does the work twice"
// (package task), and a task value run again (a retry, a process that
// starts the same registration again) must do what its doc says each
// time.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
)

// Register: "RegistrationTimeUTC is set from the executor's clock when
// 0". The same Register task value, run again an hour later (its
// instance's RegistrationTimeUTC 0), used to register the first run's
// time: the task kept it in the instance it was made with. Each run now
// registers its own time, and the Registration says so.
func TestRegisterRunAgainTakesItsOwnTime(t *testing.T) {
	for _, typ := range []discovery.ServiceType{discovery.Static, discovery.Dynamic} {
		t.Run(string(typ), func(t *testing.T) {
			w := newTestWorld(t, 1, 1)
			d, _ := discovery.New("/services")
			reg := d.Register(discovery.Instance{Name: "web", ID: "a", ServiceType: typ})
			first, err := sim.Run(w, 0, reg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Run(w, 0, first.Unregister()); err != nil {
				t.Fatal(err)
			}
			w.Clock.Advance(time.Hour)
			second, err := sim.Run(w, 0, reg)
			if err != nil {
				t.Fatal(err)
			}
			now := w.Clock.Now().UnixMilli()
			data, _, _ := w.NodeData(second.Path())
			in, err := discovery.ParseInstance(data)
			if err != nil || in.RegistrationTimeUTC != now || second.Instance().RegistrationTimeUTC != now {
				t.Errorf("the task run again an hour later: node's registrationTimeUTC %d (%v), Registration's %d; want the clock's %d (the first run's was %d)",
					in.RegistrationTimeUTC, err, second.Instance().RegistrationTimeUTC, now, first.Instance().RegistrationTimeUTC)
			}
			if _, err := sim.Run(w, 0, second.Unregister()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The same Register task value run on two executors at once (a Discovery
// "may be shared by any number of flows and executors"): each run's
// instance is its own (run under -race: the runs used to write the time
// into the one instance the task was made with).
func TestRegisterRunOnTwoExecutorsAtOnce(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	var exs []*executor.Executor
	for i := range 2 {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: uint64(i + 1)})
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(ctx) }()
		exs = append(exs, ex)
	}
	d, _ := discovery.New("/services")
	reg := d.Register(discovery.Instance{Name: "web", ID: "a", ServiceType: discovery.Static})
	regs := make([]*discovery.Registration, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, ex := range exs {
		wg.Add(1)
		go func() { defer wg.Done(); regs[i], errs[i] = executor.Await(ctx, ex, reg) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	for i, r := range regs {
		if _, err := executor.Await(ctx, exs[i], r.Unregister()); err != nil {
			t.Fatal(err)
		}
	}
}

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
	"github.com/zkflow/zkflow/task"
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

// Register: a Static instance's Register "first waits until no
// Unregister of the same instance goes on on the flow's executor
// (whoever runs it: ... or the task face, once its flow has started)".
// One Unregister task value run twice at once (a task "run twice does
// the work twice"), one run canceled: its end used to end the other's
// count too (the two runs shared it), so a Register right after went on
// while the other run was still going. That run, its read cut, read
// again after the reconnect, found the node the Register had kept (the
// same incarnation: its data replaced) and deleted it after Register
// returned nil. Each run is counted now, and the Register waits for the
// run still going: it makes the node again, and the node stays.
func TestUnregisterRunTwiceOneCanceledRegisterWaits(t *testing.T) {
	const path = "/services/web/s"
	cut := &sim.Cutter{Match: func(req task.Request) bool {
		r, ok := req.(*task.ExistsRequest)
		return ok && r.Path == path
	}, For: 500 * time.Millisecond}
	w, err := sim.New(sim.Config{Seed: 3, Clients: 1, Wrap: func(_ int, c *fakezk.Conn) task.Conn { return cut.Wrap(c) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cut.World = w
	d, _ := discovery.New("/services")
	inst := discovery.Instance{Name: "web", ID: "s", ServiceType: discovery.Static}
	r, err := sim.Run(w, 0, d.Register(inst))
	if err != nil {
		t.Fatal(err)
	}
	un := r.Unregister()
	cut.Armed = true
	first := executor.Submit(w.Execs[0], un, nil)
	second := sim.Submit(w, 0, un)
	w.Execs[0].RunUntilIdle() // both runs have sent their reads; the first one cut the connection
	if !cut.Cut {
		t.Fatal("no read was cut: the test checks nothing")
	}
	first.Cancel()
	again := sim.Submit(w, 0, d.Register(inst))
	if !w.Settle(func() bool { return again.Done && second.Done }) {
		t.Fatalf("Register %+v, the second run %+v: never ended", again, second)
	}
	if again.Err != nil || second.Err != nil {
		t.Fatalf("Register again: %v; the second run of Unregister: %v", again.Err, second.Err)
	}
	until := w.Clock.Now().Add(2 * time.Second)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if _, there := w.Server.NodeStat(path); !there || !again.V.Registered() {
		t.Fatalf("2s after Register returned nil: node there %v, Registered %v; the Unregister still going on deleted it", there, again.V.Registered())
	}
}

package discovery_test

// Promises of the package's docs that an adversarial review found broken,
// each with the schedule that broke it (they fail on the code before the
// fix), and two that held with no test of their own.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// Register: "persistent for Static and Permanent ones (an existing node's
// data is replaced; an ephemeral node there ... is deleted and the node
// made again persistent)". Over another session's ephemeral node (a
// Dynamic registration of the same id) a Static Register used to write
// that ephemeral's data and report success: the node went with the other
// session's Unregister while the Static registration still said
// Registered.
func TestStaticRegisterOverAnEphemeral(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	d, _ := discovery.New("/services")
	dyn, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sim.Run(w, 1, d.Register(discovery.Instance{Name: "web", ID: "a", Address: "static", ServiceType: discovery.Static}))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := w.NodeStat(st.Path())
	if !ok || s.EphemeralOwner != 0 {
		t.Errorf("after a successful Static Register, %s: exists %v, ephemeral owner %x (want a persistent node)", st.Path(), ok, s.EphemeralOwner)
	}
	data, _, _ := w.NodeData(st.Path())
	if in, err := discovery.ParseInstance(data); err != nil || in.Address != "static" {
		t.Errorf("%s holds %s, want the Static instance", st.Path(), data)
	}
	if _, err := sim.Run(w, 0, dyn.Unregister()); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.NodeStat(st.Path()); !ok || !st.Registered() {
		t.Errorf("after the Dynamic registration's Unregister: node there %v, Static Registered() %v; want both", ok, st.Registered())
	}
}

// Instance: PayloadClass "is written as the payload object's "@class"
// member ... and read back from it". An instance read back (Query, a
// Cache, ParseInstance) of a classed payload, ours or Curator's, has both
// PayloadClass and "@class" in Payload; it used to be refused when
// written again (json.Marshal, Register to change its address). Only two
// different classes are an error.
func TestClassedPayloadWrittenAgain(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", ServiceType: discovery.Static,
		Payload: json.RawMessage(`{"x":1}`), PayloadClass: "a.B"})); err != nil {
		t.Fatal(err)
	}
	ins, err := sim.Run(w, 0, d.Query("web"))
	if err != nil || len(ins) != 1 {
		t.Fatalf("query: %v, %v", ids(ins), err)
	}
	in := ins[0]
	in.Address = "10.0.0.2"
	if _, err := sim.Run(w, 0, d.Register(in)); err != nil {
		t.Fatalf("Register of the instance Query read, its address changed: %v", err)
	}
	again, err := sim.Run(w, 0, d.Query("web"))
	if err != nil || len(again) != 1 || again[0].Address != "10.0.0.2" || again[0].PayloadClass != "a.B" {
		t.Errorf("after writing it again: %+v, %v", again, err)
	}
	curator := `{"name":"web","id":"c","payload":{"val":"a","@class":"java.util.HashMap"},"registrationTimeUTC":1,"serviceType":"DYNAMIC"}`
	cin, err := discovery.ParseInstance([]byte(curator))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cin)
	if err != nil {
		t.Fatalf("json.Marshal of Curator's instance as read: %v", err)
	}
	if back, err := discovery.ParseInstance(b); err != nil || back.PayloadClass != "java.util.HashMap" || !json.Valid(back.Payload) {
		t.Errorf("written again: %s (%v)", b, err)
	}
	cin.PayloadClass = "other.Class"
	if _, err := json.Marshal(cin); !errors.Is(err, discovery.ErrInvalidInstance) {
		t.Errorf("a PayloadClass that is not the payload's @class: %v, want ErrInvalidInstance", err)
	}
}

// Client: "its methods are safe from any goroutine"; Unregister "ends r
// and deletes its node". Given a Registration made on another executor
// (another session), Unregister used to return nil and end r (canceling
// its keeper from the wrong executor's goroutine: a data race) while the
// node stayed for as long as the other session lived. It is refused now,
// through a Client and through the task face, and changes nothing.
func TestUnregisterOnAnotherExecutor(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	var cls []*discovery.Client
	var exs []*executor.Executor
	for i := range 2 {
		ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: uint64(i + 1)})
		running.Add(1)
		go func() { defer running.Done(); _ = ex.Run(ctx) }()
		c, _ := discovery.NewClient(ex, "/services")
		cls, exs = append(cls, c), append(exs, ex)
	}
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
		r, err := cls[0].Register(ctx, discovery.Instance{Name: "web", ID: "a", ServiceType: typ})
		if err != nil {
			t.Fatal(err)
		}
		if err := cls[1].Unregister(ctx, r); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s: Unregister through another executor's Client = %v, want ErrInvalidArgument", typ, err)
		}
		if _, err := executor.Await(ctx, exs[1], r.Unregister()); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s: the task Unregister run on another executor = %v, want ErrInvalidArgument", typ, err)
		}
		if _, ok := srv.NodeStat(r.Path()); !ok || r.Err() != nil {
			t.Errorf("%s: after the refused Unregisters: node there %v, Err %v; want it registered", typ, ok, r.Err())
		}
		if err := cls[0].Unregister(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, ok := srv.NodeStat(r.Path()); ok {
			t.Errorf("%s: %s still there after its own Client's Unregister", typ, r.Path())
		}
	}
}

// The project's standard for bad input (TestBadInput: "Nil values give
// typed errors, not panics"): a nil *ServiceCache (StartCache's result
// when it fails, as in `sc, err := c.StartCache(...); defer
// sc.Stop(ctx)`) or *Provider used to panic.
func TestNilServiceCacheAndProvider(t *testing.T) {
	ctx := context.Background()
	var sc *discovery.ServiceCache
	var p *discovery.Provider
	for name, f := range map[string]func() error{
		"ServiceCache.Stop":     func() error { return sc.Stop(ctx) },
		"ServiceCache.Next":     func() error { _, err := sc.Next(ctx); return err },
		"ServiceCache.Provider": func() error { _, err := sc.Provider(); return err },
		"Provider.Get":          func() error { _, err := p.Get(); return err },
		"ServiceCache.Instances": func() error {
			if sc.Instances() != nil || sc.Cache() != nil {
				return errors.New("not nil")
			}
			p.NoteError(discovery.Instance{})
			return task.ErrInvalidArgument
		},
	} {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return f()
		}()
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("nil %s = %v, want an error wrapping ErrInvalidArgument", name, err)
		}
	}
}

// Query: the instances "in the order of their node names (a Cache's
// order ...)": a Curator DYNAMIC_SEQUENTIAL instance "a" (node
// a0000000001) comes after "a0", in a query and in a cache alike (the
// doc used to say "sorted by id", which neither did).
func TestQueryAndCacheListByNodeName(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a0", ServiceType: discovery.Static})); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminCreate("/services/web/a0000000001",
		[]byte(`{"name":"web","id":"a","serviceType":"DYNAMIC_SEQUENTIAL"}`), 0); err != nil {
		t.Fatal(err)
	}
	ins, err := sim.Run(w, 0, d.Query("web"))
	if got := ids(ins); err != nil || !slices.Equal(got, []string{"a0", "a"}) {
		t.Errorf("Query = %q, %v; want [a0 a] (node names a0, a0000000001)", got, err)
	}
	c, _ := d.NewCache("web")
	if _, err := sim.Run(w, 0, c.Start()); err != nil {
		t.Fatal(err)
	}
	if got := ids(c.Instances()); !slices.Equal(got, ids(ins)) {
		t.Errorf("the cache lists %q, the query %q", got, ids(ins))
	}
	if _, err := sim.Run(w, 0, c.Stop()); err != nil {
		t.Fatal(err)
	}
}

// Register: "An invalid name or id fails with an error wrapping
// task.ErrInvalidPath"; New refuses a base in ZooKeeper's reserved tree.
// Under base "/", service "zookeeper" is that tree: a Static Register
// used to write /zookeeper/x into it (a Dynamic one was refused, by
// group.New). Query and NewCache refuse it too.
func TestServiceInTheReservedTree(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, err := discovery.New("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
		_, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "zookeeper", ID: "x", ServiceType: typ}))
		if _, made := w.NodeStat("/zookeeper/x"); !errors.Is(err, task.ErrInvalidPath) || made {
			t.Errorf("%s Register of zookeeper/x under / = %v, /zookeeper/x made: %v; want ErrInvalidPath", typ, err, made)
		}
	}
	if _, err := sim.Run(w, 0, d.Query("zookeeper")); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("Query(zookeeper) under / = %v, want ErrInvalidPath", err)
	}
	if _, err := d.NewCache("zookeeper"); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("NewCache(zookeeper) under / = %v, want ErrInvalidPath", err)
	}
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "x", ServiceType: discovery.Static})); err != nil {
		t.Errorf("Register of web/x under /: %v", err)
	}
}

// "registered again if someone deletes it" and a Cache "converges after
// every fault", when an operator deletes the instance, the service
// directory and the base path at one instant (the simulation's operator
// deletes instance nodes only): the keeper makes all three again and the
// cache lists the instance again.
func TestOperatorDeletesTheBasePath(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	d, _ := discovery.New("/services")
	c, _ := d.NewCache("web")
	if _, err := sim.Run(w, 1, c.Start()); err != nil {
		t.Fatal(err)
	}
	r, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return len(c.Instances()) == 1 })
	for _, p := range []string{"/services/web/a", "/services/web", "/services"} {
		if err := w.Server.AdminDelete(p); err != nil {
			t.Fatal(err)
		}
	}
	back := func() bool {
		st, ok := w.NodeStat(r.Path())
		return ok && st.EphemeralOwner == w.Conns[0].SessionID() && slices.Equal(ids(c.Instances()), []string{"a"})
	}
	w.Settle(back)
	if !back() || !r.Registered() {
		t.Fatalf("after the operator's deletes: node back %v, registered %v, cache %v", back(), r.Registered(), ids(c.Instances()))
	}
	if _, err := sim.Run(w, 1, c.Stop()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, r.Unregister()); err != nil {
		t.Fatal(err)
	}
}

// Data over the size limit: Register fails at once with an error
// wrapping task.ErrDataTooLarge and makes no node (not even the
// directories), for either kind.
func TestRegisterOverTheSizeLimit(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	big := json.RawMessage(`"` + strings.Repeat("x", task.MaxDataSize) + `"`)
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
		if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", Payload: big, ServiceType: typ})); !errors.Is(err, task.ErrDataTooLarge) {
			t.Errorf("%s Register over the size limit = %v, want ErrDataTooLarge", typ, err)
		}
	}
	if _, ok := w.NodeStat("/services"); ok {
		t.Error("a refused Register left /services")
	}
}

// Register of an id this session already holds as a Dynamic instance
// (Curator users re-register to update one): it used to succeed at once
// while the node kept the first registration's JSON, two Registrations
// sharing one node. It waits now until the first registration ends, as
// the doc says, then registers its own instance.
func TestRegisterAgainWaitsForTheFirst(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	r1, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", Port: 1}))
	if err != nil {
		t.Fatal(err)
	}
	second := sim.Submit(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", Port: 2}))
	end := w.Clock.Now().Add(5 * time.Second)
	w.Settle(func() bool { return !w.Clock.Now().Before(end) })
	if second.Done {
		t.Fatalf("a second Register of web/a ended (%v) while the first held it", second.Err)
	}
	port := func() int {
		data, _, _ := w.NodeData(r1.Path())
		in, _ := discovery.ParseInstance(data)
		return in.Port
	}
	if p := port(); p != 1 {
		t.Fatalf("web/a holds port %d while the first registration lasts, want 1", p)
	}
	if _, err := sim.Run(w, 0, r1.Unregister()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("second Register after the first's Unregister: %+v", second)
	}
	if p := port(); p != 2 || !second.V.Registered() {
		t.Fatalf("after it: port %d, registered %v; want the second instance", p, second.V.Registered())
	}
}

package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

func newTestWorld(t *testing.T, seed uint64, clients int) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: seed, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func ids(ins []discovery.Instance) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.ID
	}
	return out
}

// Instances registered on one session are found by a query on another,
// in Curator's layout: BASE/name/id holding the instance's JSON. A node
// that is not an instance is left out; Names lists the services.
func TestRegisterQuery(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	d, _ := discovery.New("/services")
	a, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", Address: "10.0.0.1", Port: 80,
		Payload: json.RawMessage(`{"zone":"x"}`)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "b", Address: "10.0.0.2", Port: 80})); err != nil {
		t.Fatal(err)
	}
	st, err := sim.Run(w, 1, d.Register(discovery.Instance{Name: "db", ID: "s", ServiceType: discovery.Static}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/services/web/junk", []byte("not json"), task.Persistent)); err != nil {
		t.Fatal(err)
	}

	data, stat, ok := w.NodeData("/services/web/a")
	if !ok || stat.EphemeralOwner != w.Conns[0].SessionID() {
		t.Fatalf("web/a: %v, owner %x", ok, stat.EphemeralOwner)
	}
	got, err := discovery.ParseInstance(data)
	if err != nil || got.Address != "10.0.0.1" || got.RegistrationTimeUTC != w.Clock.Now().UnixMilli() || got.ServiceType != discovery.Dynamic {
		t.Fatalf("web/a holds %s: %+v, %v", data, got, err)
	}
	if _, stat, _ := w.NodeData("/services/db/s"); stat.EphemeralOwner != 0 {
		t.Fatal("a static instance is ephemeral")
	}

	ins, err := sim.Run(w, 1, d.Query("web"))
	if err != nil || !slices.Equal(ids(ins), []string{"a", "b"}) {
		t.Fatalf("query web = %v, %v", ids(ins), err)
	}
	if p, _ := discovery.Payload[map[string]string](ins[0]); p["zone"] != "x" {
		t.Fatalf("payload %s", ins[0].Payload)
	}
	if names, err := sim.Run(w, 1, d.Names()); err != nil || !slices.Equal(names, []string{"db", "web"}) {
		t.Fatalf("names = %v, %v", names, err)
	}
	if ins, err := sim.Run(w, 1, d.Query("none")); err != nil || len(ins) != 0 {
		t.Fatalf("query of a missing service = %v, %v", ins, err)
	}

	if _, err := sim.Run(w, 0, a.Unregister()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, st.Unregister()); err != nil {
		t.Fatal(err)
	}
	if a.Registered() || st.Registered() || !errors.Is(a.Err(), discovery.ErrUnregistered) || !errors.Is(st.Err(), discovery.ErrUnregistered) {
		t.Fatalf("after Unregister: registered %v %v, err %v %v", a.Registered(), st.Registered(), a.Err(), st.Err())
	}
	if _, ok := w.NodeStat("/services/web/a"); ok {
		t.Fatal("web/a still there after Unregister")
	}
	if _, ok := w.NodeStat("/services/db/s"); ok {
		t.Fatal("db/s still there after Unregister")
	}
	if ins, _ := sim.Run(w, 1, d.Query("web")); !slices.Equal(ids(ins), []string{"b"}) {
		t.Fatalf("query web after unregister = %v", ids(ins))
	}
}

// A registration of a static instance over an existing node replaces its
// data (as Curator's does, which deletes and creates it again).
func TestRegisterStaticReplaces(t *testing.T) {
	w := newTestWorld(t, 2, 1)
	d, _ := discovery.New("/services")
	for _, addr := range []string{"old", "new"} {
		if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "db", ID: "s", Address: addr, ServiceType: discovery.Permanent})); err != nil {
			t.Fatal(err)
		}
	}
	ins, err := sim.Run(w, 0, d.Query("db"))
	if err != nil || len(ins) != 1 || ins[0].Address != "new" || ins[0].ServiceType != discovery.Permanent {
		t.Fatalf("query = %+v, %v", ins, err)
	}
}

// A dynamic instance whose session expires is registered again on the
// new session, and a cache on another session sees it go and come back;
// an operator's delete is undone too. A node that is not an instance is
// never listed.
func TestExpiryReregistersAndCacheFollows(t *testing.T) {
	w := newTestWorld(t, 3, 2)
	d, _ := discovery.New("/services")
	if _, err := sim.Run(w, 1, task.Create("/services", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/services/web", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Create("/services/web/junk", []byte("{"), task.Persistent)); err != nil {
		t.Fatal(err)
	}
	c, _ := d.NewCache("web")
	if _, err := sim.Run(w, 1, c.Start()); err != nil {
		t.Fatal(err)
	}
	if got := c.Instances(); len(got) != 0 {
		t.Fatalf("a node that is not an instance is cached as %+v", got)
	}
	next := func(want ...string) {
		t.Helper()
		got, err := sim.Run(w, 1, c.Next())
		if err != nil || !slices.Equal(ids(got), want) {
			t.Fatalf("cache Next = %v, %v; want %v", ids(got), err, want)
		}
	}
	r, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", Port: 1}))
	if err != nil {
		t.Fatal(err)
	}
	next("a")
	old := w.Conns[0].SessionID()
	w.Server.Expire(w.Conns[0])
	next() // the node went with the session
	w.Drive()
	st, ok := w.NodeStat("/services/web/a")
	if !ok || st.EphemeralOwner == old || st.EphemeralOwner != w.Conns[0].SessionID() || !r.Registered() {
		t.Fatalf("after expiry: node %v owner %x (old %x, new %x), registered %v", ok, st.EphemeralOwner, old, w.Conns[0].SessionID(), r.Registered())
	}
	next("a")
	if ins := c.Instances(); len(ins) != 1 || ins[0].Port != 1 {
		t.Fatalf("Instances = %+v", ins)
	}

	if _, err := sim.Run(w, 1, task.Delete("/services/web/a", task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if st, ok := w.NodeStat("/services/web/a"); !ok || st.EphemeralOwner != w.Conns[0].SessionID() {
		t.Fatal("an operator's delete was not undone")
	}
	if _, err := sim.Run(w, 0, r.Unregister()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if got := c.Instances(); len(got) != 0 {
		t.Fatalf("cache after unregister = %v", ids(got))
	}
	if _, err := sim.Run(w, 1, c.Stop()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, c.Next()); err == nil {
		t.Fatal("Next after Stop succeeded")
	}
}

// An operator's write to a registered instance's node is kept as
// written (PROTOCOL.md, Faults): the keeper does not write it back, the
// registration stays Registered, and caches list what the node holds,
// leaving it out while it is not an instance. On the next session the
// node is made again with the registered instance.
func TestOperatorWriteKeptUntilNextSession(t *testing.T) {
	w := newTestWorld(t, 4, 2)
	d, _ := discovery.New("/services")
	r, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", Port: 1}))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := d.NewCache("web")
	if _, err := sim.Run(w, 1, c.Start()); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminSetData("/services/web/a", []byte("operator")); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	data, _, _ := w.NodeData("/services/web/a")
	if string(data) != "operator" || !r.Registered() {
		t.Fatalf("after the write: node holds %q, registered %v", data, r.Registered())
	}
	if got := c.Instances(); len(got) != 0 {
		t.Fatalf("a node written with what is not an instance is cached as %+v", got)
	}
	w.Server.Expire(w.Conns[0])
	w.Settle(func() bool { return len(c.Instances()) == 1 })
	if got := c.Instances(); len(got) != 1 || got[0].Port != 1 || !r.Registered() {
		t.Fatalf("on the next session: cached %+v, registered %v", got, r.Registered())
	}
	if _, err := sim.Run(w, 1, c.Stop()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, r.Unregister()); err != nil {
		t.Fatal(err)
	}
}

func TestProviderStrategies(t *testing.T) {
	w := newTestWorld(t, 4, 1)
	ins := []discovery.Instance{{ID: "a"}, {ID: "b"}, {ID: "off", Disabled: true}, {ID: "c"}}
	src := func() []discovery.Instance { return ins }
	get := func(p *discovery.Provider) string {
		t.Helper()
		in, err := p.Get()
		if err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	rr, _ := discovery.NewProvider(src, w.Clock)
	var seq []string
	for range 6 {
		seq = append(seq, get(rr))
	}
	if want := []string{"a", "b", "c", "a", "b", "c"}; !slices.Equal(seq, want) {
		t.Fatalf("round robin %v, want %v", seq, want)
	}

	draws := []int{2, 0, 1}
	rnd, _ := discovery.NewProvider(src, w.Clock, discovery.WithStrategy(discovery.Random),
		discovery.WithRand(func(n int) int { d := draws[0]; draws = draws[1:]; return d % n }))
	if got := []string{get(rnd), get(rnd), get(rnd)}; !slices.Equal(got, []string{"c", "a", "b"}) {
		t.Fatalf("random %v", got)
	}

	st, _ := discovery.NewProvider(src, w.Clock, discovery.WithStrategy(discovery.Sticky))
	if a, b := get(st), get(st); a != "a" || b != "a" {
		t.Fatalf("sticky %s then %s", a, b)
	}
	ins = []discovery.Instance{{ID: "b"}, {ID: "c"}} // a went away
	if s := get(st); s != "c" && s != "b" {
		t.Fatalf("sticky after its instance went: %s", s)
	} else if again := get(st); again != s {
		t.Fatalf("sticky changed from %s to %s", s, again)
	}

	ins = nil
	if _, err := rr.Get(); !errors.Is(err, discovery.ErrNoInstance) {
		t.Fatalf("Get with no instance = %v", err)
	}
}

// An instance reported failing DownThreshold times is skipped until
// DownTimeout has passed since its first report, on the given clock.
func TestProviderDownInstances(t *testing.T) {
	w := newTestWorld(t, 5, 1)
	ins := []discovery.Instance{{ID: "a"}, {ID: "b"}}
	p, _ := discovery.NewProvider(func() []discovery.Instance { return ins }, w.Clock,
		discovery.WithDownThreshold(2), discovery.WithDownTimeout(10*time.Second))
	served := func() map[string]bool {
		m := map[string]bool{}
		for range 4 {
			in, err := p.Get()
			if err != nil {
				return m
			}
			m[in.ID] = true
		}
		return m
	}
	p.NoteError(ins[0])
	if m := served(); !m["a"] || !m["b"] {
		t.Fatalf("one error took a down: %v", m)
	}
	w.Clock.Advance(4 * time.Second)
	p.NoteError(ins[0])
	if m := served(); m["a"] || !m["b"] {
		t.Fatalf("two errors: served %v, want b only", m)
	}
	p.NoteError(ins[1])
	p.NoteError(ins[1])
	if _, err := p.Get(); !errors.Is(err, discovery.ErrNoInstance) {
		t.Fatalf("every instance down: Get = %v", err)
	}
	w.Clock.Advance(6*time.Second - time.Millisecond)
	if m := served(); len(m) != 0 {
		t.Fatalf("served %v before a's timeout", m)
	}
	w.Clock.Advance(time.Millisecond) // 10s since a's first report
	if m := served(); !m["a"] || m["b"] {
		t.Fatalf("at a's timeout: served %v, want a only", m)
	}
}

func TestBadInput(t *testing.T) {
	for _, b := range []string{"", "rel", "/a/", "/zookeeper", "/zookeeper/x"} {
		if _, err := discovery.New(b); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q) = %v, want ErrInvalidPath", b, err)
		}
	}
	if _, err := discovery.NewClient(nil, "/s"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient(nil) = %v", err)
	}
	w := newTestWorld(t, 6, 1)
	d, _ := discovery.New("/s")
	for _, in := range []discovery.Instance{{Name: "", ID: "a"}, {Name: "a/b", ID: "a"}, {Name: "x", ID: ""}, {Name: "x", ID: ".."}} {
		if _, err := sim.Run(w, 0, d.Register(in)); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("Register(%+v) = %v, want ErrInvalidPath", in, err)
		}
	}
	for _, in := range []discovery.Instance{
		{Name: "x", ID: "a", ServiceType: discovery.DynamicSequential},
		{Name: "x", ID: "a", ServiceType: "OTHER"},
		{Name: "x", ID: "a", Payload: json.RawMessage("{")},
	} {
		if _, err := sim.Run(w, 0, d.Register(in)); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("Register(%+v) = %v, want ErrInvalidArgument", in, err)
		}
	}
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "x", ID: "big", Payload: json.RawMessage(`"s"`)})); err != nil {
		t.Errorf("Register with a string payload = %v", err)
	}
	if _, err := sim.Run(w, 0, d.Query("a/b")); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("Query(bad name) = %v", err)
	}
	if _, err := d.NewCache(""); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("NewCache(empty) = %v", err)
	}
	for name, o := range map[string]discovery.ProviderOption{
		"WithDownThreshold(-1)": discovery.WithDownThreshold(-1),
		"WithDownTimeout(-1)":   discovery.WithDownTimeout(-1),
		"WithStrategy(7)":       discovery.WithStrategy(7),
		"nil option":            nil,
	} {
		if _, err := discovery.NewProvider(func() []discovery.Instance { return nil }, w.Clock, o); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("NewProvider(%s) = %v", name, err)
		}
	}
	if _, err := discovery.NewProvider(nil, w.Clock); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewProvider(nil source) = %v", err)
	}
	// Nil values give typed errors, not panics.
	var nd *discovery.Discovery
	var nr *discovery.Registration
	var nc *discovery.Cache
	var ncl *discovery.Client
	ctx := context.Background()
	for name, err := range map[string]error{
		"Register":   second(sim.Run(w, 0, nd.Register(discovery.Instance{Name: "x", ID: "a"}))),
		"Query":      second(sim.Run(w, 0, nd.Query("x"))),
		"Names":      second(sim.Run(w, 0, nd.Names())),
		"Unregister": second(sim.Run(w, 0, nr.Unregister())),
		"Start":      second(sim.Run(w, 0, nc.Start())),
		"Next":       second(sim.Run(w, 0, nc.Next())),
		"Stop":       second(sim.Run(w, 0, nc.Stop())),
		"NewCache":   second(nd.NewCache("x")),
		"Client":     second(ncl.Query(ctx, "x")),
	} {
		if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("nil %s = %v", name, err)
		}
	}
	cl, _ := discovery.NewClient(w.Execs[0], "/s")
	if err := cl.Unregister(ctx, nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Unregister(nil) = %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// A query's instances are the caller's: changing one's Payload or URISpec
// changes no other query's (the parse behind them is shared).
func TestQueryResultsAreTheCallers(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", Payload: json.RawMessage(`{"zone":"x"}`),
		URISpec: &discovery.URISpec{Parts: []discovery.URIPart{{Value: "scheme", Variable: true}}}})); err != nil {
		t.Fatal(err)
	}
	first, err := sim.Run(w, 0, d.Query("web"))
	if err != nil || len(first) != 1 {
		t.Fatalf("query: %v, %v", first, err)
	}
	first[0].Payload[2] = 'Z'
	first[0].URISpec.Parts[0].Value = "changed"
	again, err := sim.Run(w, 0, d.Query("web"))
	if err != nil || len(again) != 1 {
		t.Fatalf("query: %v, %v", again, err)
	}
	if string(again[0].Payload) != `{"zone":"x"}` || again[0].URISpec.Parts[0].Value != "scheme" {
		t.Fatalf("a change to one query's instance shows in the next: payload %s, uriSpec %+v", again[0].Payload, *again[0].URISpec)
	}
}

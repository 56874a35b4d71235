package discovery_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// A provider of a cache that has ended does not hand out its last
// instances as if they were followed: its Get fails with the cache's
// error. The schedule: an operator's ACL refuses the service's directory
// its reads, the cache's session expires, its read on the new session is
// refused and the cache ends; the instance is then deleted.
func TestProviderOfAnEndedCache(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	d, _ := discovery.New("/services")
	if _, err := sim.Run(w, 1, d.Register(discovery.Instance{Name: "web", ID: "a", ServiceType: discovery.Static})); err != nil {
		t.Fatal(err)
	}
	c, _ := d.NewCache("web")
	if _, err := sim.Run(w, 0, c.Start()); err != nil {
		t.Fatal(err)
	}
	p, err := c.Provider(w.Execs[0].Clock())
	if err != nil {
		t.Fatal(err)
	}
	if in, err := p.Get(); err != nil || in.ID != "a" {
		t.Fatalf("Get on the running cache: %q, %v", in.ID, err)
	}
	if err := w.Server.AdminSetACL(w.ServerPath("/services/web"), []task.ACL{{Perms: task.PermCreate | task.PermDelete, Scheme: "world", ID: "anyone"}}); err != nil {
		t.Fatal(err)
	}
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return c.Err() != nil }) {
		t.Fatal("the cache never ended")
	}
	if err := w.Server.AdminDelete(w.ServerPath("/services/web/a")); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if in, err := p.Get(); !errors.Is(err, task.ErrNoAuth) {
		t.Errorf("Get on the ended cache (%v): %q, %v; want its error", c.Err(), in.ID, err)
	}
}

// The same for a ServiceCache stopped by its user.
func TestServiceCacheProviderAfterStop(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	var getErr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		cl, err := discovery.NewClient(a.Exec(), "/services")
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := cl.Register(a.Context(), discovery.Instance{Name: "web", ID: "a"}); err != nil {
			t.Error(err)
			return
		}
		sc, err := cl.StartCache(a.Context(), "web")
		if err != nil {
			t.Error(err)
			return
		}
		p, err := sc.Provider()
		if err != nil {
			t.Error(err)
			return
		}
		if in, err := p.Get(); err != nil || in.ID != "a" {
			t.Errorf("Get on the running cache: %q, %v", in.ID, err)
		}
		if err := sc.Stop(a.Context()); err != nil {
			t.Error(err)
		}
		_, getErr = p.Get()
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("stuck")
	}
	if !errors.Is(getErr, cache.ErrStopped) {
		t.Errorf("Get after Stop: %v; want cache.ErrStopped", getErr)
	}
}

// An instance Provider.Get hands out is the caller's: a change to its
// Payload or URISpec (a URI template filled in place) shows neither in
// the cache nor in a query of the Discovery, which parse a node once
// between them.
func TestProviderGetIsTheCallers(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", Payload: json.RawMessage(`{"zone":"x"}`),
		URISpec: &discovery.URISpec{Parts: []discovery.URIPart{{Value: "scheme", Variable: true}}}})); err != nil {
		t.Fatal(err)
	}
	c, _ := d.NewCache("web")
	if _, err := sim.Run(w, 0, c.Start()); err != nil {
		t.Fatal(err)
	}
	p, err := c.Provider(w.Execs[0].Clock())
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Get()
	if err != nil {
		t.Fatal(err)
	}
	in.Payload[2] = 'Z'
	in.URISpec.Parts[0].Value = "changed"
	q, err := sim.Run(w, 0, d.Query("web"))
	if err != nil || len(q) != 1 {
		t.Fatalf("query: %v, %v", q, err)
	}
	cached := c.Instances()
	for what, got := range map[string]discovery.Instance{"the query's": q[0], "the cache's": cached[0]} {
		if string(got.Payload) != `{"zone":"x"}` || got.URISpec.Parts[0].Value != "scheme" {
			t.Errorf("a change to Get's instance shows in %s: payload %s, uriSpec %+v", what, got.Payload, *got.URISpec)
		}
	}
}

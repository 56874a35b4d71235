package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// Bad input the package doc and Register's promise a typed error for,
// through the task face: names and ids that are no single path component
// (ErrInvalidPath); a port Curator's Integer cannot hold, and a payload
// that is not JSON or not UTF-8 (ErrInvalidArgument); and an instance
// whose JSON is over the server's data limit, which the server refuses
// (task.ErrDataTooLarge), for every service type, leaving no node.
func TestBadInstancesRefused(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/s")
	for _, in := range []discovery.Instance{
		{Name: "x", ID: "a/b"}, {Name: "x", ID: "."}, {Name: ".", ID: "a"}, {Name: "..", ID: "a"},
		{Name: "x", ID: "a\x00"}, {Name: "x", ID: "a\u0001"}, {Name: "x\ufffe", ID: "a"}, {Name: "x", ID: "/"},
	} {
		for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
			in.ServiceType = typ
			if _, err := sim.Run(w, 0, d.Register(in)); !errors.Is(err, task.ErrInvalidPath) {
				t.Errorf("Register(%q/%q, %s) = %v, want ErrInvalidPath", in.Name, in.ID, typ, err)
			}
		}
		if _, err := sim.Run(w, 0, d.Query(in.Name)); in.Name != "x" && !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("Query(%q) = %v, want ErrInvalidPath", in.Name, err)
		}
	}
	for _, in := range []discovery.Instance{
		{Name: "x", ID: "p", Port: math.MaxInt32 + 1},
		{Name: "x", ID: "p", SSLPort: math.MinInt32 - 1},
		{Name: "x", ID: "p", Payload: json.RawMessage("\"\xff\"")},
		{Name: "x", ID: "p", PayloadClass: "a.B"},
	} {
		for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
			in.ServiceType = typ
			if _, err := sim.Run(w, 0, d.Register(in)); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("Register(%+v) = %v, want ErrInvalidArgument", in, err)
			}
		}
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static, discovery.Permanent} {
		reg, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "x", ID: "big", Payload: big, ServiceType: typ}))
		if !errors.Is(err, task.ErrDataTooLarge) {
			t.Errorf("Register of %s instance over the data limit = %v, %v; want task.ErrDataTooLarge", typ, reg, err)
		}
	}
	// A Static instance there already, written over with data too large.
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "x", ID: "big", ServiceType: discovery.Static})); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "x", ID: "big", Payload: big, ServiceType: discovery.Static})); !errors.Is(err, task.ErrDataTooLarge) {
		t.Errorf("Register over a Static node with data over the limit = %v, want task.ErrDataTooLarge", err)
	}
	if ins, err := sim.Run(w, 0, d.Query("x")); err != nil || len(ins) != 1 || ins[0].Payload != nil {
		t.Errorf("Query after the refused Registers: %+v, %v; want the first Static registration only", ins, err)
	}
}

// Every Client call with a ctx that has ended returns its error at once
// (task.ErrCanceled, matching context.Canceled), and a Register leaves no
// node.
func TestClientCallsWithEndedCtx(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	var errs map[string]error
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		c, err := discovery.NewClient(a.Exec(), "/s")
		if err != nil {
			t.Error(err)
			return
		}
		sc, err := c.StartCache(a.Context(), "web")
		if err != nil {
			t.Error(err)
			return
		}
		reg, err := c.Register(a.Context(), discovery.Instance{Name: "web", ID: "kept"})
		if err != nil {
			t.Error(err)
			return
		}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		errs = map[string]error{}
		for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
			_, errs["Register "+string(typ)] = c.Register(ended, discovery.Instance{Name: "web", ID: "a", ServiceType: typ})
		}
		_, errs["Names"] = c.Names(ended)
		_, errs["Query"] = c.Query(ended, "web")
		_, errs["StartCache"] = c.StartCache(ended, "web")
		_, errs["Next"] = sc.Next(ended)
		errs["Unregister"] = c.Unregister(ended, reg)
		errs["Stop"] = sc.Stop(ended)
	})
	if !w.Settle(func() bool { return done }) {
		t.Fatal("the calls never returned")
	}
	for call, err := range errs {
		if !errors.Is(err, task.ErrCanceled) || !errors.Is(err, context.Canceled) {
			t.Errorf("%s with an ended ctx = %v, want task.ErrCanceled", call, err)
		}
	}
	if ch := w.Children("/s/web"); len(ch) != 0 {
		t.Errorf("nodes left after the calls: %v", ch)
	}
}

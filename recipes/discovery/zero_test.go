package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// noPanic runs f and reports a panic as a test error.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked: %v", what, p)
		}
	}()
	f()
}

// A nil or zero Client (not made by NewClient) fails every call with an
// error wrapping task.ErrInvalidArgument, at once. Register, Names and
// Query panicked (a nil dereference of its Discovery).
func TestZeroClientRefused(t *testing.T) {
	ctx := context.Background()
	inst := discovery.Instance{Name: "web", ID: "a"}
	for name, c := range map[string]*discovery.Client{"zero": {}, "nil": nil} {
		calls := map[string]func() error{
			"Register":   func() error { _, err := c.Register(ctx, inst); return err },
			"Unregister": func() error { return c.Unregister(ctx, &discovery.Registration{}) },
			"Names":      func() error { _, err := c.Names(ctx); return err },
			"Query":      func() error { _, err := c.Query(ctx, "web"); return err },
			"StartCache": func() error { _, err := c.StartCache(ctx, "web"); return err },
		}
		for call, f := range calls {
			noPanic(t, fmt.Sprintf("%s of a %s Client", call, name), func() {
				if err := f(); !errors.Is(err, task.ErrInvalidArgument) {
					t.Errorf("%s of a %s Client = %v, want task.ErrInvalidArgument", call, name, err)
				}
			})
		}
		noPanic(t, "Discovery of a "+name+" Client", func() { _ = c.Discovery() })
	}
}

// A nil or zero Discovery (not made by New) gives tasks that fail with an
// error wrapping task.ErrInvalidArgument, and NewCache fails so too. A
// zero one's base is "": its Static Register made /web/a at the root of
// the tree and succeeded, its Dynamic Register never ended, its Query
// and NewCache succeeded on /web; a nil one's Base and ServicePath
// panicked.
func TestZeroDiscoveryRefused(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	inst := discovery.Instance{Name: "web", ID: "a", ServiceType: discovery.Static}
	for name, d := range map[string]*discovery.Discovery{"zero": {}, "nil": nil} {
		noPanic(t, "Base and ServicePath of a "+name+" Discovery", func() { _, _ = d.Base(), d.ServicePath("web") })
		calls := map[string]func() error{
			"Register": func() error { _, err := sim.Run(w, 0, d.Register(inst)); return err },
			"Register dynamic": func() error {
				_, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a"}))
				return err
			},
			"Names":    func() error { _, err := sim.Run(w, 0, d.Names()); return err },
			"Query":    func() error { _, err := sim.Run(w, 0, d.Query("web")); return err },
			"NewCache": func() error { _, err := d.NewCache("web"); return err },
		}
		for call, f := range calls {
			noPanic(t, fmt.Sprintf("%s of a %s Discovery", call, name), func() {
				if err := f(); !errors.Is(err, task.ErrInvalidArgument) {
					t.Errorf("%s of a %s Discovery = %v, want task.ErrInvalidArgument", call, name, err)
				}
			})
		}
	}
	if ch := w.Children("/"); len(ch) != 1 {
		t.Errorf("the root holds %v after the zero Discovery's calls, want only /zookeeper", ch)
	}
}

// A nil or zero Registration (a failed Register's nil, say) answers its
// accessors as one that has ended, and its Unregister fails with
// task.ErrInvalidArgument: they panicked, and a zero one reported
// Registered true with a Done never closed.
func TestZeroRegistrationEnded(t *testing.T) {
	for name, r := range map[string]*discovery.Registration{"zero": {}, "nil": nil} {
		noPanic(t, "the accessors of a "+name+" Registration", func() {
			if in := r.Instance(); in.ID != "" {
				t.Errorf("%s Registration's Instance %+v", name, in)
			}
			if p := r.Path(); p != "" {
				t.Errorf("%s Registration's Path %q", name, p)
			}
			if r.Registered() {
				t.Errorf("a %s Registration is Registered", name)
			}
			select {
			case <-r.Done():
			default:
				t.Errorf("a %s Registration's Done is not closed", name)
			}
			if err := r.Err(); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("a %s Registration's Err = %v, want task.ErrInvalidArgument", name, err)
			}
		})
		w := newTestWorld(t, 1, 1)
		noPanic(t, "Unregister of a "+name+" Registration", func() {
			if _, err := sim.Run(w, 0, r.Unregister()); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("Unregister of a %s Registration = %v, want task.ErrInvalidArgument", name, err)
			}
		})
	}
}

// A nil or zero Cache, ServiceCache or Provider answers without a panic:
// a Cache's tasks and a Provider's Get fail with task.ErrInvalidArgument,
// a Cache's Done is closed and its Err says why; NoteError does nothing.
func TestZeroCacheAndProvider(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	for name, c := range map[string]*discovery.Cache{"zero": {}, "nil": nil} {
		noPanic(t, "the accessors of a "+name+" Cache", func() {
			_ = c.Name()
			if ins := c.Instances(); ins != nil {
				t.Errorf("a %s Cache lists %v", name, ins)
			}
			select {
			case <-c.Done():
			default:
				t.Errorf("a %s Cache's Done is not closed", name)
			}
			if err := c.Err(); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("a %s Cache's Err = %v, want task.ErrInvalidArgument", name, err)
			}
		})
		calls := map[string]func() error{
			"Start":    func() error { _, err := sim.Run(w, 0, c.Start()); return err },
			"Next":     func() error { _, err := sim.Run(w, 0, c.Next()); return err },
			"Stop":     func() error { _, err := sim.Run(w, 0, c.Stop()); return err },
			"Provider": func() error { _, err := c.Provider(w.Execs[0].Clock()); return err },
		}
		for call, f := range calls {
			noPanic(t, fmt.Sprintf("%s of a %s Cache", call, name), func() {
				if err := f(); !errors.Is(err, task.ErrInvalidArgument) {
					t.Errorf("%s of a %s Cache = %v, want task.ErrInvalidArgument", call, name, err)
				}
			})
		}
	}
	ctx := context.Background()
	for name, s := range map[string]*discovery.ServiceCache{"zero": {}, "nil": nil} {
		noPanic(t, "a "+name+" ServiceCache", func() {
			if s.Cache() != nil || s.Instances() != nil {
				t.Errorf("a %s ServiceCache has a cache", name)
			}
			if _, err := s.Next(ctx); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("Next of a %s ServiceCache = %v", name, err)
			}
			if _, err := s.Provider(); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("Provider of a %s ServiceCache = %v", name, err)
			}
			if err := s.Stop(ctx); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("Stop of a %s ServiceCache = %v", name, err)
			}
		})
	}
	for name, p := range map[string]*discovery.Provider{"zero": {}, "nil": nil} {
		noPanic(t, "a "+name+" Provider", func() {
			if _, err := p.Get(); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("Get of a %s Provider = %v, want task.ErrInvalidArgument", name, err)
			}
			p.NoteError(discovery.Instance{ID: "a"})
		})
	}
}

// UnmarshalJSON on a nil *Instance fails (as json.RawMessage's does)
// rather than panic.
func TestNilInstanceUnmarshal(t *testing.T) {
	noPanic(t, "UnmarshalJSON on a nil *Instance", func() {
		var in *discovery.Instance
		if err := in.UnmarshalJSON([]byte(`{"id":"a"}`)); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("UnmarshalJSON on a nil *Instance = %v, want task.ErrInvalidArgument", err)
		}
	})
}

package config_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

func markerWorld(t *testing.T, wrap func(i int, c *fakezk.Conn) task.Conn) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: wrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	for _, p := range []string{"/cfg", "/cfg/a", "/cfg/b"} {
		if _, err := sim.Run(w, 1, task.Create(p, []byte("0"), task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func data(w *sim.World, p string) string {
	d, _, ok := w.Server.NodeData(p)
	if !ok {
		return "<none>"
	}
	return string(d)
}

// stall never sends client's requests on path while on: the writer
// stops there, its update half applied.
type stall struct {
	*fakezk.Conn
	path string
	on   *bool
	// cutMarker: after a delete of the marker is sent (and applied), cut
	// the client off for a while: the delete's reply is lost.
	cutMarker bool
	w         *sim.World
	cut       bool
}

func (c *stall) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if *c.on && req.NodePath() == c.path {
		return // never sent, never answered
	}
	c.Conn.Do(req, done, watch)
	if d, ok := req.(*task.DeleteRequest); ok && c.cutMarker && !c.cut && d.Path == "/cfg/"+config.MarkerName {
		c.cut = true
		c.w.Server.Partition(c.Conn, c.w.Timeout()/3, true)
	}
}

// A marked writer dies after its first entry, leaving its marker. A new
// process with the same identity and the same executor seed starts a
// marked update of its own: it must not take the dead writer's marker
// for its own (which would expose the half-written update when it
// deletes the marker), but wait for the marker to go.
func TestMarkedUpdateAfterCrashDoesNotTakeDeadWritersMarker(t *testing.T) {
	on := true
	w := markerWorld(t, func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 {
			return &stall{Conn: c, path: "/cfg/b", on: &on}
		}
		return c
	})
	o := sim.Submit(w, 0, config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")}))
	if !w.Settle(func() bool { return data(w, "/cfg/a") == "1" }) {
		t.Fatal("the first entry was never written")
	}
	if o.Done {
		t.Fatalf("the update ended before the crash: %v", o.Err)
	}
	if err := w.Crash(0, false); err != nil {
		t.Fatal(err)
	}
	on = false
	o2 := sim.Submit(w, 0, config.UpdateMarked("/cfg", map[string][]byte{"c": []byte("2")}))
	w.Settle(func() bool { return o2.Done })
	if o2.Done {
		t.Fatalf("the restarted process's update ended (%v) with the dead writer's marker in place: a=%s b=%s marker=%s",
			o2.Err, data(w, "/cfg/a"), data(w, "/cfg/b"), data(w, "/cfg/"+config.MarkerName))
	}
	if data(w, "/cfg/"+config.MarkerName) == "<none>" {
		t.Fatalf("the dead writer's marker was deleted: a half-applied update (a=%s b=%s) is visible", data(w, "/cfg/a"), data(w, "/cfg/b"))
	}
}

// A marked writer's final delete of the marker is applied but its reply
// is lost; meanwhile another marked writer creates its own marker and
// stops after its first entry. The first writer's retry must not delete
// the second's marker (which would expose the second update half
// applied).
func TestMarkerDeleteLostReplyKeepsNextWritersMarker(t *testing.T) {
	on := false // not while the world is set up
	var first *stall
	w := markerWorld(t, func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 {
			first = &stall{Conn: c, path: "/none", on: &on, cutMarker: true}
			return first
		}
		return &stall{Conn: c, path: "/cfg/b", on: &on}
	})
	first.w = w
	on = true
	o := sim.Submit(w, 0, config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("1")}))
	if !w.Settle(func() bool { return first.cut }) {
		t.Fatal("the marker's delete was never sent")
	}
	o2 := sim.Submit(w, 1, config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("2"), "b": []byte("2")}))
	if !w.Settle(func() bool { return data(w, "/cfg/a") == "2" }) {
		t.Fatal("the second writer never wrote")
	}
	if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
		t.Fatalf("first update: %v", o.Err)
	}
	if o2.Done {
		t.Fatalf("the second update ended: %v", o2.Err)
	}
	if data(w, "/cfg/"+config.MarkerName) == "<none>" {
		t.Fatalf("the first writer's retried delete removed the second writer's marker: half-applied a=%s b=%s visible", data(w, "/cfg/a"), data(w, "/cfg/b"))
	}
}

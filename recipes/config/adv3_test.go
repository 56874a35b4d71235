package config_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

// expireAt expires the client's session just before its first request of
// type R on path is handed to the server: the request fails with the
// session expired, as one sent just after the server expired it.
type expireAt[R task.Request] struct {
	*fakezk.Conn
	path  string
	w     *sim.World
	fired bool
}

func (c *expireAt[R]) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if _, ok := req.(R); ok && !c.fired && req.NodePath() == c.path {
		c.fired = true
		c.w.Server.Expire(c.Conn)
	}
	c.Conn.Do(req, done, watch)
}

// The package doc: "If the writer's session expires midway, the marker
// stays ... and UpdateMarked fails with task.ErrSessionExpired: running
// the same task again ... resumes and completes the update". The session
// expires after every entry is written and the marker read back (ours),
// just as its delete is sent. UpdateMarked must not report success with
// the marker in place: no reader that honours it would ever deliver the
// update, and every other writer would wait for it for ever.
func TestAdv3MarkerDeleteOnExpiredSessionIsNoSuccess(t *testing.T) {
	var ex *expireAt[*task.DeleteRequest]
	w := markerWorld(t, func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 {
			ex = &expireAt[*task.DeleteRequest]{Conn: c, path: "/cfg/" + config.MarkerName}
			return ex
		}
		return c
	})
	ex.w = w
	up := config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")})
	o := sim.Submit(w, 0, up)
	w.Settle(func() bool { return o.Done })
	if !o.Done {
		t.Fatal("the update never ended")
	}
	if !ex.fired {
		t.Fatal("the marker's delete was never sent")
	}
	marker := data(w, "/cfg/"+config.MarkerName)
	if o.Err == nil && marker != "<none>" {
		t.Fatalf("UpdateMarked succeeded with its marker left on the server (%s): readers never deliver a=%s b=%s", marker, data(w, "/cfg/a"), data(w, "/cfg/b"))
	}
	if !errors.Is(o.Err, task.ErrSessionExpired) {
		t.Fatalf("UpdateMarked: %v, want task.ErrSessionExpired", o.Err)
	}
	// Running the same task again finishes the update.
	if _, err := sim.Run(w, 0, up); err != nil {
		t.Fatalf("UpdateMarked run again: %v", err)
	}
	if m := data(w, "/cfg/"+config.MarkerName); m != "<none>" {
		t.Fatalf("the marker is left after the update run again: %s", m)
	}
}

// hold holds client's requests on path back while on, and sends them
// on release.
type hold struct {
	*fakezk.Conn
	path string
	on   bool
	held []func()
}

func (c *hold) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if c.on && req.NodePath() == c.path {
		c.held = append(c.held, func() { c.Conn.Do(req, done, watch) })
		return
	}
	c.Conn.Do(req, done, watch)
}

func (c *hold) release() {
	c.on = false
	for _, f := range c.held {
		f()
	}
	c.held = nil
}

// writersWorld is a world of three clients: 0 and 1 write /cfg (a and b
// at "0"), 2 follows it with a marker-honouring WatchDir whose
// deliveries it returns. Client 0's requests on /cfg/b are held back
// while h.on: its marked update stops half applied.
func writersWorld(t *testing.T) (*sim.World, *hold, *[]config.Snapshot) {
	t.Helper()
	h := &hold{path: "/cfg/b"}
	w, err := sim.New(sim.Config{Seed: 1, Clients: 3, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 && h.Conn == nil {
			h.Conn = c
			return h
		}
		return c
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	for _, p := range []string{"/cfg", "/cfg/a", "/cfg/b"} {
		if _, err := sim.Run(w, 1, task.Create(p, []byte("0"), task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	var got []config.Snapshot
	if _, err := sim.Run(w, 2, config.WatchDir("/cfg", config.DirOptions{Marker: true}, func(s config.Snapshot) {
		got = append(got, s)
	})); err != nil {
		t.Fatal(err)
	}
	return w, h, &got
}

// whole fails t if a delivered snapshot mixes two updates, and returns
// the value of the last.
func whole(t *testing.T, got []config.Snapshot) string {
	t.Helper()
	for _, s := range got {
		if string(s.Values["a"]) != string(s.Values["b"]) {
			t.Fatalf("half-applied update delivered: a=%s b=%s", s.Values["a"], s.Values["b"])
		}
	}
	if len(got) == 0 {
		return "<nothing>"
	}
	return string(got[len(got)-1].Values["a"])
}

// Two writers at once. Client 0's marked update stops after its first
// entry; client 1's marked update and client 1's Update (its multi) both
// wait for client 0's marker: neither writes an entry under it, the
// reader stays on the last complete configuration. Once client 0's
// update goes on and deletes its marker, the waiting writers complete,
// one at a time, and the reader ends on a whole configuration.
func TestAdv3SecondWriterWaitsForMarker(t *testing.T) {
	for _, second := range []string{"UpdateMarked", "Update"} {
		t.Run(second, func(t *testing.T) {
			w, h, got := writersWorld(t)
			h.on = true
			o0 := sim.Submit(w, 0, config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")}))
			if !w.Settle(func() bool { return data(w, "/cfg/a") == "1" }) {
				t.Fatal("the first entry was never written")
			}
			two := map[string][]byte{"a": []byte("2"), "b": []byte("2")}
			up := config.UpdateMarked("/cfg", two)
			if second == "Update" {
				up = config.Update("/cfg", two)
			}
			o1 := sim.Submit(w, 1, up)
			w.Settle(func() bool { return o1.Done })
			if o1.Done || data(w, "/cfg/a") != "1" || data(w, "/cfg/b") != "0" {
				t.Fatalf("the second writer went on under the first's marker: done %v (%v), a=%s b=%s", o1.Done, o1.Err, data(w, "/cfg/a"), data(w, "/cfg/b"))
			}
			if v := whole(t, *got); v != "0" {
				t.Fatalf("the reader delivered %s while the marker stood, want the last complete configuration 0", v)
			}
			h.release()
			if !w.Settle(func() bool { return o0.Done && o1.Done }) || o0.Err != nil || o1.Err != nil {
				t.Fatalf("the writers did not both complete: first %v %v, second %v %v", o0.Done, o0.Err, o1.Done, o1.Err)
			}
			w.Settle(func() bool { return whole(t, *got) == "2" })
			if v := whole(t, *got); v != "2" || data(w, "/cfg/"+config.MarkerName) != "<none>" {
				t.Fatalf("the reader ends at %s, marker %s; want 2 and no marker", v, data(w, "/cfg/"+config.MarkerName))
			}
		})
	}
}

// runFor drives w for d of its clock, in steps of 100ms.
func runFor(w *sim.World, d time.Duration) {
	for ; d > 0; d -= 100 * time.Millisecond {
		w.Drive()
		w.Clock.Advance(100 * time.Millisecond)
	}
	w.Drive()
}

// A marked writer's process crashes after its first entry (World.Crash:
// its executor abandoned, its session left to expire). The package doc:
// "a crashed writer must not expose a half-written configuration", "A
// writer that never comes back leaves readers on the last complete
// configuration, and other writers waiting", "running the same task
// again ... resumes and completes the update". Past the dead session's
// expiry the marker stays, the reader stays on 0 and client 1's Update
// waits; the new process runs the same task value again (as one that
// kept its token would): the update completes, then client 1's, and the
// reader ends on client 1's whole configuration.
func TestAdv3CrashedMarkedWriterResumedByNewProcess(t *testing.T) {
	w, h, got := writersWorld(t)
	h.on = true
	one := config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")})
	o0 := sim.Submit(w, 0, one)
	if !w.Settle(func() bool { return data(w, "/cfg/a") == "1" }) {
		t.Fatal("the first entry was never written")
	}
	o1 := sim.Submit(w, 1, config.Update("/cfg", map[string][]byte{"a": []byte("2"), "b": []byte("2")}))
	dead := w.Conns[0].SessionID()
	if err := w.Crash(0, false); err != nil {
		t.Fatal(err)
	}
	runFor(w, 3*w.Timeout())
	if slices.Contains(w.Server.Sessions(), dead) {
		t.Fatal("the dead writer's session is still alive")
	}
	if o0.Done || o1.Done {
		t.Fatalf("an update ended: the dead writer's %v (%v), client 1's %v (%v)", o0.Done, o0.Err, o1.Done, o1.Err)
	}
	if m := data(w, "/cfg/"+config.MarkerName); m == "<none>" {
		t.Fatal("the dead writer's marker went with its session")
	}
	if v := whole(t, *got); v != "0" {
		t.Fatalf("the reader delivered %s under the dead writer's marker, want 0", v)
	}
	if _, err := sim.Run(w, 0, one); err != nil {
		t.Fatalf("the same task run again on the new process: %v", err)
	}
	if !w.Settle(func() bool { return o1.Done }) || o1.Err != nil {
		t.Fatalf("client 1's Update, once the marker went: done %v, %v", o1.Done, o1.Err)
	}
	w.Settle(func() bool { return whole(t, *got) == "2" })
	if v := whole(t, *got); v != "2" {
		t.Fatalf("the reader ends at %s, want 2", v)
	}
}

// PROTOCOL.md: a dead writer's marker holds other writers back "until an
// operator deletes the marker". Client 1's Update and a marked update of
// the restarted process (a new task: a new token) both wait for the
// dead writer's marker; once an operator deletes it, both complete.
func TestAdv3WaitingWritersGoOnOnceOperatorDeletesMarker(t *testing.T) {
	w, h, _ := writersWorld(t)
	h.on = true
	sim.Submit(w, 0, config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")}))
	if !w.Settle(func() bool { return data(w, "/cfg/a") == "1" }) {
		t.Fatal("the first entry was never written")
	}
	if err := w.Crash(0, false); err != nil {
		t.Fatal(err)
	}
	o1 := sim.Submit(w, 1, config.Update("/cfg", map[string][]byte{"a": []byte("2"), "b": []byte("2")}))
	o0 := sim.Submit(w, 0, config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("3"), "b": []byte("3")}))
	runFor(w, 3*w.Timeout())
	if o0.Done || o1.Done {
		t.Fatalf("an update went on under the dead writer's marker: %v (%v), %v (%v)", o0.Done, o0.Err, o1.Done, o1.Err)
	}
	if err := w.Server.AdminDelete("/cfg/" + config.MarkerName); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return o0.Done && o1.Done }) || o0.Err != nil || o1.Err != nil {
		t.Fatalf("after the operator's delete: restarted writer %v (%v), client 1 %v (%v)", o0.Done, o0.Err, o1.Done, o1.Err)
	}
	if a, b := data(w, "/cfg/a"), data(w, "/cfg/b"); a != b || data(w, "/cfg/"+config.MarkerName) != "<none>" {
		t.Fatalf("a=%s b=%s marker %s", a, b, data(w, "/cfg/"+config.MarkerName))
	}
}

// cutAfter sends client's first request of type R on path, then cuts
// the client off for longer than its session timeout: the request is
// applied, its reply lost, the session expires.
type cutAfter[R task.Request] struct {
	*fakezk.Conn
	path string
	w    *sim.World
	cut  bool
}

func (c *cutAfter[R]) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if _, ok := req.(R); ok && !c.cut && req.NodePath() == c.path {
		c.cut = true
		c.w.Server.Partition(c.Conn, 2*c.w.Timeout(), true)
	}
}

// A marked writer's final delete of the marker is applied, but its reply
// is lost and its session expires: the update is complete, and the task
// fails with ErrSessionExpired. Meanwhile client 1's Update writes 2.
// Running the first task again (as the doc says to after
// ErrSessionExpired) must not write its entries a second time over
// client 1's later update: the reader would see 1, then 2, then 1 again,
// and client 1's acknowledged update would be lost.
func TestAdv3MarkedUpdateRunAgainAfterItsDeleteDoesNotUndoLaterUpdate(t *testing.T) {
	var cut *cutAfter[*task.DeleteRequest]
	w, err := sim.New(sim.Config{Seed: 1, Clients: 3, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 && cut == nil {
			cut = &cutAfter[*task.DeleteRequest]{Conn: c, path: "/cfg/" + config.MarkerName}
			return cut
		}
		return c
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	cut.w = w
	if _, err := sim.Run(w, 1, config.Update("/cfg", map[string][]byte{"a": []byte("0"), "b": []byte("0")})); err != nil {
		t.Fatal(err)
	}
	var got []config.Snapshot
	if _, err := sim.Run(w, 2, config.WatchDir("/cfg", config.DirOptions{Marker: true}, func(s config.Snapshot) { got = append(got, s) })); err != nil {
		t.Fatal(err)
	}
	one := config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")})
	o0 := sim.Submit(w, 0, one)
	if !w.Settle(func() bool { return cut.cut }) {
		t.Fatal("the marker's delete was never sent")
	}
	if _, err := sim.Run(w, 1, config.Update("/cfg", map[string][]byte{"a": []byte("2"), "b": []byte("2")})); err != nil {
		t.Fatalf("client 1's Update: %v", err)
	}
	if !w.Settle(func() bool { return o0.Done }) || !errors.Is(o0.Err, task.ErrSessionExpired) {
		t.Fatalf("the first update: done %v, %v; want task.ErrSessionExpired", o0.Done, o0.Err)
	}
	if _, err := sim.Run(w, 0, one); err != nil {
		t.Fatalf("the same task run again: %v", err)
	}
	w.Settle(func() bool { return false })
	var seen []string
	for _, s := range got {
		seen = append(seen, string(s.Values["a"]))
	}
	if a, b := data(w, "/cfg/a"), data(w, "/cfg/b"); a != "2" || b != "2" {
		t.Fatalf("the completed update run again wrote its entries over client 1's later update: a=%s b=%s, the reader saw %v", a, b, seen)
	}
}

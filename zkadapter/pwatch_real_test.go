package zkadapter

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// A persistent recursive watch survives a reconnect of its session: the
// prelude sets it again (SetWatches2) and it fires on the next change. The
// server sends no event for what changed while the client was cut off
// (3.8 re-adds persistent watches without a zxid check), and the watch's
// stream shows the transitions around the gap, so its reader knows to
// re-read. A one-time watch set on the same connection is re-checked as
// before and fires for its missed change.
func TestPersistentWatchAcrossReconnect(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	var p partitioner
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 6 * time.Second, Dialer: p.dial})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	other, or := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 6 * time.Second})
	mustOK(t, do(t, other, or, &task.CreateRequest{Path: "/pw", Mode: task.Persistent, ACL: task.OpenACL}, nil))

	rw := &watcher{r: r, ch: make(chan task.Event, 64)}
	mustOK(t, do(t, c, r, &task.AddWatchRequest{Path: "/pw", Mode: task.WatchPersistentRecursive}, rw))
	oneShot := r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/pw", Watch: true}, oneShot))
	// The one-time watch on the root path took the recursive registration
	// off the server (3.8): it fires with the recursive watch once...
	mustOK(t, do(t, other, or, &task.SetDataRequest{Path: "/pw", Data: []byte("0"), Version: -1}, nil))
	if ev := oneShot.wait(t, 10*time.Second); ev.Type != task.EventNodeDataChanged {
		t.Fatalf("one-time watch = %v", ev)
	}
	if ev := rw.wait(t, 10*time.Second); ev.Type != task.EventNodeDataChanged || ev.Path != "/pw" {
		t.Fatalf("recursive watch = %v", ev)
	}
	// ...and the recursive watch hears nothing more until a reconnect.
	mustOK(t, do(t, other, or, &task.CreateRequest{Path: "/pw/lost", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	mustOK(t, do(t, c, r, &task.SyncRequest{Path: "/"}, nil))
	rw.none(t)

	p.partition()
	_, si := r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	mustOK(t, do(t, other, or, &task.CreateRequest{Path: "/pw/missed", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	p.heal()
	again, _ := r.waitState(t, si, task.StateConnected, 15*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x after reconnect, want %#x", again.SessionID, first.SessionID)
	}
	if ev := rw.wait(t, 10*time.Second); ev.Type != task.EventNone || ev.State != task.StateSuspended {
		t.Fatalf("stream after the cut = %v, want Suspended", ev)
	}
	if ev := rw.wait(t, 10*time.Second); ev.Type != task.EventNone || ev.State != task.StateConnected || ev.SessionID != first.SessionID {
		t.Fatalf("stream after the reconnect = %v, want Connected", ev)
	}
	// A request made after the StateConnected event is handled after the
	// prelude that set the watch again: a change after its reply is
	// reported. (A change by another session between the reconnect and
	// the prelude is missed, as one during the cut is: a reader re-reads
	// after StateConnected.) No catch-up event for /pw/missed.
	mustOK(t, do(t, c, r, &task.SyncRequest{Path: "/"}, nil))
	mustOK(t, do(t, other, or, &task.CreateRequest{Path: "/pw/after", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	if ev := rw.wait(t, 10*time.Second); ev.Type != task.EventNodeCreated || ev.Path != "/pw/after" {
		t.Fatalf("recursive watch after reconnect = %v, want NodeCreated /pw/after", ev)
	}
	mustOK(t, do(t, other, or, &task.SetDataRequest{Path: "/pw/after", Data: []byte("1"), Version: -1}, nil))
	if ev := rw.wait(t, 10*time.Second); ev.Type != task.EventNodeDataChanged || ev.Path != "/pw/after" {
		t.Fatalf("recursive watch = %v, want NodeDataChanged /pw/after", ev)
	}
	mustOK(t, do(t, c, r, &task.RemoveWatchesRequest{Path: "/pw", Type: task.WatcherAny}, nil))
	if ev := rw.wait(t, 10*time.Second); ev.Type != task.EventWatchRemoved {
		t.Fatalf("after RemoveWatches = %v", ev)
	}
	mustOK(t, do(t, other, or, &task.DeleteRequest{Path: "/pw/after", Version: -1}, nil))
	mustOK(t, do(t, c, r, &task.SyncRequest{Path: "/"}, nil))
	rw.none(t)
	r.checkNoOverlap(t)
}

// Under a chroot the watch is set on the rooted path and its events carry
// the paths as the Conn's user sees them.
func TestPersistentWatchRoot(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	admin, ar := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 6 * time.Second})
	mustOK(t, do(t, admin, ar, &task.CreateRequest{Path: "/app", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 6 * time.Second, Root: "/app"})
	w := &watcher{r: r, ch: make(chan task.Event, 8)}
	mustOK(t, do(t, c, r, &task.AddWatchRequest{Path: "/", Mode: task.WatchPersistentRecursive}, w))
	mustOK(t, do(t, admin, ar, &task.CreateRequest{Path: "/app/a", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	mustOK(t, do(t, admin, ar, &task.CreateRequest{Path: "/outside", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	mustOK(t, do(t, admin, ar, &task.SetDataRequest{Path: "/app", Data: []byte("x"), Version: -1}, nil))
	for _, want := range []task.Event{{Type: task.EventNodeCreated, Path: "/a"}, {Type: task.EventNodeDataChanged, Path: "/"}} {
		if ev := w.wait(t, 10*time.Second); ev.Type != want.Type || ev.Path != want.Path {
			t.Fatalf("event %v, want %v", ev, want)
		}
	}
	mustOK(t, do(t, c, r, &task.RemoveWatchesRequest{Path: "/", Type: task.WatcherAny}, nil))
	if ev := w.wait(t, 10*time.Second); ev.Type != task.EventWatchRemoved || ev.Path != "/" {
		t.Fatalf("after RemoveWatches = %v", ev)
	}
}

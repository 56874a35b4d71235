package fakezk_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Under a chroot a recursive watch is set on the rooted path and reports
// the changes below it with the paths the client sees; a change outside
// the root does not reach it (as zkadapter's TestPersistentWatchRoot shows
// on a real server).
func TestPersistentWatchChroot(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	admin := connectRoot(t, srv, "")
	admin.must(data("/app", ""))
	app := connectRoot(t, srv, "/app")
	var got []string
	resp := app.do(&task.AddWatchRequest{Path: "/", Mode: task.WatchPersistentRecursive}, func(ev task.Event) {
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Path))
	})
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	admin.must(data("/app/a", ""))
	admin.must(data("/outside", ""))
	admin.must(&task.SetDataRequest{Path: "/app", Data: []byte("x"), Version: -1})
	app.must(&task.RemoveWatchesRequest{Path: "/", Type: task.WatcherAny})
	admin.must(data("/app/b", ""))
	want := "NodeCreated /a, NodeDataChanged /, WatchRemoved /"
	if g := strings.Join(got, ", "); g != want {
		t.Fatalf("events\n got: %s\nwant: %s", g, want)
	}
}

// WatchedPaths lists, under a chroot too, the server's paths a session
// watches; RemoveWatchesNow removes them as a RemoveWatches of another
// user of the session would: the client's watches of the type end with
// WatchRemoved, the others stay and fire, and a path the session no longer
// watches is no longer listed. A session not connected watches nothing.
func TestRemoveWatchesNow(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	admin := connectRoot(t, srv, "")
	admin.must(data("/app", ""))
	admin.must(data("/app/a", ""))
	app := connectRoot(t, srv, "/app")
	var got []string
	rec := func(ev task.Event) { got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Path)) }
	app.do(&task.GetDataRequest{Path: "/a", Watch: true}, rec)
	app.do(&task.GetChildrenRequest{Path: "/a", Watch: true}, rec)
	app.do(&task.ExistsRequest{Path: "/b", Watch: true}, rec)
	if resp := app.do(&task.AddWatchRequest{Path: "/", Mode: task.WatchPersistent}, rec); resp.Err != nil {
		t.Fatal(resp.Err)
	}
	paths, persistent := srv.WatchedPaths(app.c)
	if g, want := strings.Join(paths, " ")+"; "+strings.Join(persistent, " "), "/app /app/a /app/b; /app"; g != want {
		t.Fatalf("watched paths (all; persistent) %q, want %q", g, want)
	}
	if !srv.RemoveWatchesNow(app.c, "/app/a", task.WatcherData) {
		t.Fatal("no data registration on /app/a")
	}
	if srv.RemoveWatchesNow(app.c, "/app/a", task.WatcherData) {
		t.Fatal("a second removal found a data registration on /app/a")
	}
	if !srv.RemoveWatchesNow(app.c, "/app", task.WatcherAny) {
		t.Fatal("no registration on /app")
	}
	if g, _ := srv.WatchedPaths(app.c); strings.Join(g, " ") != "/app/a /app/b" {
		t.Fatalf("watched paths after the removals %q, want [/app/a /app/b]", g)
	}
	admin.must(data("/app/a/x", ""))
	admin.must(data("/app/b", ""))
	want := "WatchRemoved /a, WatchRemoved /, NodeChildrenChanged /a, NodeCreated /b"
	if g := strings.Join(got, ", "); g != want {
		t.Fatalf("events\n got: %s\nwant: %s", g, want)
	}
	if g, _ := srv.WatchedPaths(app.c); len(g) != 0 {
		t.Fatalf("watched paths once every watch fired: %v", g)
	}
	app.do(&task.ExistsRequest{Path: "/b", Watch: true}, rec)
	app.c.Close()
	if g, _ := srv.WatchedPaths(app.c); g != nil {
		t.Fatalf("a closed connection watches %v", g)
	}
	if srv.RemoveWatchesNow(app.c, "/app/b", task.WatcherAny) {
		t.Fatal("RemoveWatchesNow removed a watch of a closed connection")
	}
}

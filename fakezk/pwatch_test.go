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

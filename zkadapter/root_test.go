package zkadapter

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func TestParseConnectString(t *testing.T) {
	for _, tc := range []struct {
		in      string
		servers []string
		root    string
		bad     bool
	}{
		{"a:1", []string{"a:1"}, "", false},
		{"a:1,b:2/app", []string{"a:1", "b:2"}, "/app", false},
		{"a:1, b:2/app/x", []string{"a:1", "b:2"}, "/app/x", false},
		{"a:1/", []string{"a:1"}, "", false},
		{"a:1/app/", nil, "", true},
		{"/app", nil, "", true},
		{"", nil, "", true},
	} {
		servers, root, err := ParseConnectString(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%q: err = %v, want ErrInvalidConfig", tc.in, err)
			}
			continue
		}
		if err != nil || !slices.Equal(servers, tc.servers) || root != tc.root {
			t.Errorf("%q = %v %q %v", tc.in, servers, root, err)
		}
	}
	for _, root := range []string{"app", "/app/", "/a//b"} {
		cfg := Config{Servers: []string{"a:1"}, Root: root}
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Root %q: Validate = %v", root, err)
		}
	}
}

// Under a root, every path a request names is under it on the server, and
// every path handed back (create names, sync, multi results, events) has
// it taken off.
func TestRootPaths(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	plain, pr := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	mustOK(t, do(t, plain, pr, &task.CreateRequest{Path: "/app", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	c, r := open(t, Config{Servers: srv.Addrs(), Root: "/app", SessionTimeout: 4 * time.Second})

	if got := mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/x", Data: []byte("1"), Mode: task.Persistent, ACL: task.OpenACL}, nil)); got.Path != "/x" {
		t.Fatalf("create name %q, want /x", got.Path)
	}
	if got := mustOK(t, do(t, plain, pr, &task.GetDataRequest{Path: "/app/x"}, nil)); string(got.Data) != "1" {
		t.Fatalf("/app/x holds %q", got.Data)
	}
	seq := mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/x/s-", Mode: task.PersistentSequential, ACL: task.OpenACL}, nil))
	if seq.Path != "/x/s-0000000000" {
		t.Fatalf("sequential name %q", seq.Path)
	}
	kids := mustOK(t, do(t, c, r, &task.GetChildrenRequest{Path: "/"}, nil))
	if !slices.Equal(kids.Children, []string{"x"}) {
		t.Fatalf("children of the root: %v", kids.Children)
	}
	if got := mustOK(t, do(t, c, r, &task.SyncRequest{Path: "/x"}, nil)); got.Path != "/x" {
		t.Fatalf("sync path %q", got.Path)
	}
	m := mustOK(t, do(t, c, r, &task.MultiRequest{Ops: []task.MultiOp{
		&task.CreateRequest{Path: "/y", Mode: task.Persistent, ACL: task.OpenACL},
		&task.SetDataRequest{Path: "/x", Data: []byte("2"), Version: -1},
	}}, nil))
	if m.Results[0].Path != "/y" {
		t.Fatalf("multi create name %q", m.Results[0].Path)
	}

	data, child, exist := r.watcher(), r.watcher(), r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/x", Watch: true}, data))
	mustOK(t, do(t, c, r, &task.GetChildrenRequest{Path: "/", Watch: true}, child))
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/z", Watch: true}, exist), task.ErrNoNode)
	mustOK(t, do(t, plain, pr, &task.SetDataRequest{Path: "/app/x", Data: []byte("3"), Version: -1}, nil))
	mustOK(t, do(t, plain, pr, &task.CreateRequest{Path: "/app/z", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	for w, want := range map[*watcher]task.Event{
		data:  {Type: task.EventNodeDataChanged, State: task.StateConnected, Path: "/x"},
		child: {Type: task.EventNodeChildrenChanged, State: task.StateConnected, Path: "/"},
		exist: {Type: task.EventNodeCreated, State: task.StateConnected, Path: "/z"},
	} {
		if ev := w.wait(t, 5*time.Second); ev != want {
			t.Fatalf("event %+v, want %+v", ev, want)
		}
	}
	// A sequential create of "/" names a child of the root.
	sr := mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/", Mode: task.PersistentSequential, ACL: task.OpenACL}, nil))
	if len(sr.Path) != 11 || sr.Path[0] != '/' {
		t.Fatalf("sequential create of the root named %q", sr.Path)
	}
	mustOK(t, do(t, plain, pr, &task.ExistsRequest{Path: "/app" + sr.Path}, nil))
	// A path outside the root is out of reach: "/app" is the root itself.
	mustErr(t, do(t, c, r, &task.GetDataRequest{Path: "/app"}, nil), task.ErrNoNode)
}

// Dial with a root the server does not have fails at once, naming the
// root, with task.ErrNoNode (and closes its Conn); with the root there it
// succeeds.
func TestDialMissingRoot(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{Servers: srv.Addrs(), Root: "/missing-root", SessionTimeout: 4 * time.Second, Logger: testLogger(t)})
	if !errors.Is(err, task.ErrNoNode) || !strings.Contains(err.Error(), "/missing-root") {
		t.Fatalf("Dial under a missing root: conn returned %v, err %v; want task.ErrNoNode naming the root", c != nil, err)
	}
	plain, pr := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	mustOK(t, do(t, plain, pr, &task.CreateRequest{Path: "/missing-root", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	open(t, Config{Servers: srv.Addrs(), Root: "/missing-root", SessionTimeout: 4 * time.Second})
}

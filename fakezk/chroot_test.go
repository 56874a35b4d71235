package fakezk_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// rooted is a test's view of one Conn in automatic mode: every callback
// has run when Do returns.
type rooted struct {
	t *testing.T
	c *fakezk.Conn
}

func connectRoot(t *testing.T, srv *fakezk.Server, root string) rooted {
	t.Helper()
	c := srv.Connect(fakezk.ConnConfig{Root: root})
	if err := c.Start(func(task.Event) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return rooted{t, c}
}

// do sends req and returns its response (automatic mode: it has arrived).
func (r rooted) do(req task.Request, watch func(task.Event)) task.Response {
	r.t.Helper()
	var got *task.Response
	r.c.Do(req, func(resp task.Response) { got = &resp }, watch)
	if got == nil {
		r.t.Fatalf("%s %s: no response", req.OpName(), req.NodePath())
	}
	return *got
}

// must is do that fails the test on an error.
func (r rooted) must(req task.Request) task.Response {
	r.t.Helper()
	resp := r.do(req, nil)
	if resp.Err != nil {
		r.t.Fatalf("%s %s: %v", req.OpName(), req.NodePath(), resp.Err)
	}
	return resp
}

func data(p string, d string) *task.CreateRequest {
	return &task.CreateRequest{Path: p, Data: []byte(d), ACL: task.OpenACL}
}

func seq(p string) *task.CreateRequest {
	return &task.CreateRequest{Path: p, ACL: task.OpenACL, Mode: task.PersistentSequential}
}

// under lists the server's paths below prefix (prefix itself included).
func under(srv *fakezk.Server, prefix string) []string {
	var out []string
	for _, p := range srv.Paths() {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
	}
	return out
}

// A create under a root lands at root+path in the server's tree and
// answers with the client's path; reads see the node at the client's path;
// a client without a root sees the full path.
func TestChrootCreateAndRead(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	plain := connectRoot(t, srv, "")
	plain.must(mk("/app"))
	plain.must(mk("/app/svc"))
	c := connectRoot(t, srv, "/app/svc")

	if got := c.must(data("/a", "x")).Path; got != "/a" {
		t.Errorf("create answered %q, want /a", got)
	}
	c.must(data("/a/b", "y"))
	if got := under(srv, "/app"); !slices.Equal(got, []string{"/app", "/app/svc", "/app/svc/a", "/app/svc/a/b"}) {
		t.Errorf("server tree %v", got)
	}
	if _, _, ok := srv.NodeData("/a"); ok {
		t.Error("the create reached /a, outside the root")
	}
	if d, _, _ := srv.NodeData("/app/svc/a/b"); string(d) != "y" {
		t.Errorf("server has %q at /app/svc/a/b", d)
	}

	if got := c.must(&task.GetDataRequest{Path: "/a/b"}); string(got.Data) != "y" {
		t.Errorf("get /a/b = %q", got.Data)
	}
	if got := c.must(&task.GetChildrenRequest{Path: "/a"}).Children; !slices.Equal(got, []string{"b"}) {
		t.Errorf("children of /a = %v", got)
	}
	c.must(&task.SetDataRequest{Path: "/a", Data: []byte("z"), Version: task.AnyVersion})
	if d, _, _ := srv.NodeData("/app/svc/a"); string(d) != "z" {
		t.Errorf("set reached %q", d)
	}
	if got := plain.must(&task.GetDataRequest{Path: "/app/svc/a"}); string(got.Data) != "z" {
		t.Errorf("plain client reads %q at the full path", got.Data)
	}
	if got := plain.must(mk("/app/svc/p")).Path; got != "/app/svc/p" {
		t.Errorf("plain create answered %q, want the full path", got)
	}
	c.must(&task.DeleteRequest{Path: "/a/b", Version: task.AnyVersion})
	if _, ok := srv.NodeStat("/app/svc/a/b"); ok {
		t.Error("delete under the root left the node")
	}
	if got := c.do(&task.ExistsRequest{Path: "/a/b"}, nil).Err; got != task.ErrNoNode {
		t.Errorf("exists of a deleted node: %v", got)
	}
}

// "/" is the root itself: get, children, set and exists of "/" are the
// root node's; create "/" creates the root node (its parent must exist)
// and delete "/" deletes it, where without a root both are refused.
func TestChrootSlashIsTheRoot(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	plain := connectRoot(t, srv, "")
	plain.must(mk("/app"))
	c := connectRoot(t, srv, "/app/svc")

	if got := c.do(mk("/x"), nil).Err; got != task.ErrNoNode {
		t.Fatalf("create under a missing root: %v, want ErrNoNode", got)
	}
	if got := under(srv, "/app"); !slices.Equal(got, []string{"/app"}) {
		t.Fatalf("the Conn created nodes on its own: %v", got)
	}
	if got := c.must(data("/", "root")).Path; got != "/" {
		t.Errorf("create / answered %q, want /", got)
	}
	if d, _, ok := srv.NodeData("/app/svc"); !ok || string(d) != "root" {
		t.Fatalf("create / made %q (%v) at /app/svc", d, ok)
	}
	c.must(mk("/x"))
	if got := c.must(&task.GetDataRequest{Path: "/"}); string(got.Data) != "root" || got.Stat.NumChildren != 1 {
		t.Errorf("get / = %q, %d children", got.Data, got.Stat.NumChildren)
	}
	if got := c.must(&task.GetChildrenRequest{Path: "/"}).Children; !slices.Equal(got, []string{"x"}) {
		t.Errorf("children of / = %v (zookeeper's nodes are not below the root)", got)
	}
	c.must(&task.SetDataRequest{Path: "/", Data: []byte("r2"), Version: 0})
	if d, _, _ := srv.NodeData("/app/svc"); string(d) != "r2" {
		t.Errorf("set / wrote %q", d)
	}
	if got := c.do(&task.DeleteRequest{Path: "/", Version: task.AnyVersion}, nil).Err; got != task.ErrNotEmpty {
		t.Errorf("delete of a root with children: %v", got)
	}
	c.must(&task.DeleteRequest{Path: "/x", Version: task.AnyVersion})
	c.must(&task.DeleteRequest{Path: "/", Version: task.AnyVersion})
	if _, ok := srv.NodeStat("/app/svc"); ok {
		t.Error("delete / left the root node")
	}
	if got := c.do(&task.ExistsRequest{Path: "/"}, nil).Err; got != task.ErrNoNode {
		t.Errorf("exists / after the root went: %v", got)
	}
	if got := plain.do(&task.DeleteRequest{Path: "/", Version: task.AnyVersion}, nil).Err; got != task.ErrBadArguments {
		t.Errorf("delete / without a root: %v, want ErrBadArguments", got)
	}
}

// Sequential names: the server appends the counter to the full path (the
// parent's cversion, below the root as anywhere), the client gets the name
// without the root. A sequential create of "/" names a child of the root.
func TestChrootSequential(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	plain := connectRoot(t, srv, "")
	plain.must(mk("/app"))
	plain.must(mk("/app/q"))
	plain.must(mk("/app/q/other"))
	c := connectRoot(t, srv, "/app")

	if got := c.must(seq("/q/n-")).Path; got != "/q/n-0000000001" {
		t.Errorf("sequential create answered %q", got)
	}
	if _, ok := srv.NodeStat("/app/q/n-0000000001"); !ok {
		t.Errorf("server paths %v", under(srv, "/app"))
	}
	if got := c.must(seq("/")).Path; got != "/0000000001" {
		t.Errorf("sequential create of / answered %q, want /0000000001", got)
	}
	if _, ok := srv.NodeStat("/app/0000000001"); !ok {
		t.Errorf("sequential create of / made %v", under(srv, "/app"))
	}
	res := c.must(&task.MultiRequest{Ops: []task.MultiOp{seq("/q/m-"), seq("/q/m-")}}).Results
	if len(res) != 2 || res[0].Path != "/q/m-0000000002" || res[1].Path != "/q/m-0000000003" {
		t.Errorf("multi's sequential names %+v", res)
	}
}

// Every op of a multi is prefixed and every result's path stripped; a
// failed multi reports the same errors and results as without a root.
func TestChrootMulti(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	plain := connectRoot(t, srv, "")
	plain.must(mk("/app"))
	plain.must(data("/app/a", "a0"))
	plain.must(mk("/app/gone"))
	c := connectRoot(t, srv, "/app")

	ops := []task.MultiOp{
		&task.CheckRequest{Path: "/a", Version: 0},
		data("/b", "b0"),
		&task.SetDataRequest{Path: "/a", Data: []byte("a1"), Version: 0},
		&task.DeleteRequest{Path: "/gone", Version: task.AnyVersion},
		&task.CheckRequest{Path: "/", Version: task.AnyVersion},
	}
	res := c.must(&task.MultiRequest{Ops: ops}).Results
	if len(res) != len(ops) || res[1].Path != "/b" || res[2].Stat.Version != 1 {
		t.Fatalf("results %+v", res)
	}
	if got := under(srv, "/app"); !slices.Equal(got, []string{"/app", "/app/a", "/app/b"}) {
		t.Errorf("server tree %v", got)
	}
	if d, _, _ := srv.NodeData("/app/a"); string(d) != "a1" {
		t.Errorf("set in the multi wrote %q", d)
	}

	bad := c.do(&task.MultiRequest{Ops: []task.MultiOp{
		data("/c", ""),
		&task.CheckRequest{Path: "/a", Version: 0}, // it is at 1 now
		&task.DeleteRequest{Path: "/b", Version: task.AnyVersion},
	}}, nil)
	want := []task.MultiResult{{RolledBack: true}, {Err: task.ErrBadVersion}, {Err: task.ErrRuntimeInconsistency}}
	if bad.Err != task.ErrBadVersion || !slices.Equal(bad.Results, want) {
		t.Errorf("failed multi: %v %+v, want %v %+v", bad.Err, bad.Results, task.ErrBadVersion, want)
	}
	if got := c.do(&task.MultiRequest{Ops: []task.MultiOp{&task.CheckRequest{Path: "/b/none", Version: 0}}}, nil).Err; got != task.ErrNoNode {
		t.Errorf("check of a missing node: %v", got)
	}
	// The caller's request is not changed by the prefixing.
	if ops[1].NodePath() != "/b" || ops[4].NodePath() != "/" {
		t.Errorf("the multi's ops were changed: %s, %s", ops[1].NodePath(), ops[4].NodePath())
	}
}

// Sync's path goes out with the root and comes back without it.
func TestChrootSync(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Trace: true})
	plain := connectRoot(t, srv, "")
	plain.must(mk("/app"))
	c := connectRoot(t, srv, "/app")
	for _, p := range []string{"/x", "/"} {
		if got := c.must(&task.SyncRequest{Path: p}).Path; got != p {
			t.Errorf("sync %s answered %q", p, got)
		}
	}
	var sent []string // the paths of the syncs the server received
	for _, l := range srv.Trace() {
		if _, req, ok := strings.Cut(l, " send #"); ok && strings.Contains(req, " sync ") {
			sent = append(sent, req[strings.LastIndexByte(req, ' ')+1:])
		}
	}
	if !slices.Equal(sent, []string{"/app/x", "/app"}) {
		t.Errorf("the server received syncs of %v, want the full paths", sent)
	}
}

// Watch notifications name the client's path: exists on a missing node,
// getData, getChildren (of "/" too), each fired by a client without a root
// writing the full path; a client without a root watching the same node
// sees the full path.
func TestChrootWatches(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	plain := connectRoot(t, srv, "")
	plain.must(mk("/app"))
	c := connectRoot(t, srv, "/app")

	var got []string
	rec := func(tag string) func(task.Event) {
		return func(ev task.Event) { got = append(got, fmt.Sprintf("%s %s %s", tag, ev.Type, ev.Path)) }
	}
	if err := c.do(&task.ExistsRequest{Path: "/x", Watch: true}, rec("exists")).Err; err != task.ErrNoNode {
		t.Fatal(err)
	}
	c.do(&task.GetChildrenRequest{Path: "/", Watch: true}, rec("children"))
	plain.do(&task.ExistsRequest{Path: "/app/x", Watch: true}, rec("plain"))
	plain.must(mk("/app/x"))
	c.do(&task.GetDataRequest{Path: "/x", Watch: true}, rec("data"))
	c.do(&task.GetChildrenRequest{Path: "/x", Watch: true}, rec("xchildren"))
	plain.must(mk("/app/x/y"))
	plain.must(&task.SetDataRequest{Path: "/app/x", Data: []byte("d"), Version: task.AnyVersion})
	check(t, got,
		"exists NodeCreated /x",
		"children NodeChildrenChanged /",
		"plain NodeCreated /app/x",
		"xchildren NodeChildrenChanged /x",
		"data NodeDataChanged /x",
	)
	got = nil
	c.do(&task.ExistsRequest{Path: "/", Watch: true}, rec("root"))
	c.do(&task.GetDataRequest{Path: "/x/y", Watch: true}, rec("y"))
	plain.must(&task.DeleteRequest{Path: "/app/x/y", Version: task.AnyVersion})
	plain.must(&task.SetDataRequest{Path: "/app", Data: []byte("d"), Version: task.AnyVersion})
	check(t, got, "y NodeDeleted /x/y", "root NodeDataChanged /")
}

// Watches the server re-checks on reconnect (SetWatches) and the
// EventNotWatching of a session's end name the client's path too.
func TestChrootWatchesAcrossReconnectAndExpiry(t *testing.T) {
	srv, clk := detServer(3)
	plain, _ := start(t, srv, 4*time.Second)
	plain.Do(mk("/app"), nil, nil)
	plain.Do(mk("/app/a"), nil, nil)
	plain.Do(mk("/app/b"), nil, nil)
	srv.RunUntilIdle()

	c := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second, Root: "/app"})
	var got []string
	c.Start(func(ev task.Event) {
		if ev.Type == task.EventNone {
			got = append(got, "state "+ev.State.String())
		}
	})
	rec := func(ev task.Event) { got = append(got, fmt.Sprintf("watch %s %s %s", ev.Type, ev.Path, ev.State)) }
	c.Do(&task.GetDataRequest{Path: "/a", Watch: true}, nil, rec)
	c.Do(&task.ExistsRequest{Path: "/b", Watch: true}, nil, rec)
	srv.RunUntilIdle()

	srv.Partition(c, time.Second, false)
	srv.RunUntilIdle()
	plain.Do(&task.SetDataRequest{Path: "/app/a", Data: []byte("x"), Version: task.AnyVersion}, nil, nil)
	srv.RunUntilIdle()
	clk.Advance(time.Second) // heals: SetWatches fires /a's watch
	srv.RunUntilIdle()
	srv.Expire(c) // /b's watch ends with the session
	srv.RunUntilIdle()
	c.Close()
	srv.RunUntilIdle()
	plain.Close()
	srv.RunUntilIdle()
	check(t, got,
		"state Connected",
		"state Suspended",
		"state Connected",
		"watch NodeDataChanged /a Connected",
		"state Suspended",
		"watch NotWatching /b Expired",
		"state Expired",
		"state Connected",
		"state Closed",
	)
}

// Errors are the same as without a root, and the caller's request is left
// as it was (a task.OpError names the path the caller gave).
func TestChrootErrorsUnchanged(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	plain := connectRoot(t, srv, "")
	plain.must(mk("/app"))
	plain.must(mk("/app/a"))
	c := connectRoot(t, srv, "/app")
	for _, tc := range []struct {
		req  task.Request
		want error
	}{
		{mk("/a"), task.ErrNodeExists},
		{mk("/none/x"), task.ErrNoNode},
		{&task.SetDataRequest{Path: "/a", Version: 7}, task.ErrBadVersion},
		{&task.GetDataRequest{Path: "/none"}, task.ErrNoNode},
		{mk("a"), task.ErrInvalidPath},
		{mk("/a/"), task.ErrInvalidPath},
		{&task.CheckRequest{Path: "/a"}, task.ErrUnimplemented},
	} {
		before := tc.req.NodePath()
		err := c.do(tc.req, nil).Err
		if !errors.Is(err, tc.want) {
			t.Errorf("%s %s: %v, want %v", tc.req.OpName(), before, err, tc.want)
		}
		if tc.req.NodePath() != before {
			t.Errorf("%s %s: the request's path became %s", tc.req.OpName(), before, tc.req.NodePath())
		}
	}
}

// The packet limit counts the path on the wire, root included: a set
// that fits with its client path is refused, unapplied, once the root is
// added.
func TestChrootPacketLimitCountsTheRoot(t *testing.T) {
	const root = "/a-rather-long-root"
	set := &task.SetDataRequest{Path: "/n", Data: make([]byte, 1000), Version: task.AnyVersion}
	srv := fakezk.New(fakezk.Config{MaxPacketSize: reqcheck.PacketSize(set) + len(root) - 1})
	plain := connectRoot(t, srv, "")
	plain.must(mk(root))
	plain.must(mk(root + "/n"))
	plain.must(mk("/n"))
	plain.must(set) // fits without the root
	c := connectRoot(t, srv, root)
	if err := c.do(set, nil).Err; !errors.Is(err, task.ErrDataTooLarge) {
		t.Errorf("set whose full path is over the limit: %v", err)
	}
	if st, _ := srv.NodeStat(root + "/n"); st.Version != 0 {
		t.Errorf("the refused set was applied: version %d", st.Version)
	}
}

// Root validation: "" and "/" mean no root; anything else must be a valid
// path; Connect panics otherwise.
func TestChrootRootValidation(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	for _, root := range []string{"app", "/app/", "/a//b", "/a/./b", "/a\x00"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Connect with Root %q did not panic", root)
				}
			}()
			srv.Connect(fakezk.ConnConfig{Root: root})
		}()
	}
	c := connectRoot(t, srv, "/")
	if got := c.must(mk("/x")).Path; got != "/x" {
		t.Errorf("root / answered %q", got)
	}
	if _, ok := srv.NodeStat("/x"); !ok {
		t.Error("root /: /x not at /x")
	}
}

// A Conn under a root sees the tree below it as the whole tree.
func Example_chroot() {
	srv := fakezk.New(fakezk.Config{})
	admin := srv.Connect(fakezk.ConnConfig{})
	admin.Start(func(task.Event) {})
	admin.Do(&task.CreateRequest{Path: "/app", ACL: task.OpenACL}, func(task.Response) {}, nil)

	c := srv.Connect(fakezk.ConnConfig{Root: "/app"})
	c.Start(func(task.Event) {})
	c.Do(&task.ExistsRequest{Path: "/job", Watch: true}, func(task.Response) {}, func(ev task.Event) {
		fmt.Println("watch:", ev.Type, ev.Path)
	})
	c.Do(&task.CreateRequest{Path: "/job-", ACL: task.OpenACL, Mode: task.PersistentSequential}, func(r task.Response) {
		fmt.Println("created", r.Path)
	}, nil)
	admin.Do(&task.CreateRequest{Path: "/app/job", ACL: task.OpenACL}, func(r task.Response) {
		fmt.Println("admin created", r.Path)
	}, nil)
	fmt.Println(srv.Paths())
	c.Close()
	admin.Close()
	// Output:
	// created /job-0000000000
	// watch: NodeCreated /job
	// admin created /app/job
	// [/ /app /app/job /app/job-0000000000 /zookeeper /zookeeper/config /zookeeper/quota]
}

// getACL and setACL go under the root like every other request.
func TestChrootACL(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	plain := connectRoot(t, srv, "")
	plain.must(data("/app", ""))
	plain.must(data("/app/x", "1"))
	app := connectRoot(t, srv, "/app")
	read := []task.ACL{{Perms: task.PermRead | task.PermAdmin, Scheme: "world", ID: "anyone"}}
	app.must(&task.SetACLRequest{Path: "/x", ACL: read, Version: -1})
	got := plain.must(&task.GetACLRequest{Path: "/app/x"})
	if !slices.Equal(got.ACL, read) {
		t.Fatalf("/app/x's ACL after setACL of /x under /app: %v", got.ACL)
	}
	if via := app.must(&task.GetACLRequest{Path: "/x"}); !slices.Equal(via.ACL, read) {
		t.Fatalf("getACL of /x under /app: %v", via.ACL)
	}
}

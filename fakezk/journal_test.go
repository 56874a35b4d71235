package fakezk_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// mirror is what a journal that replays every Commit knows: the tree and
// the last zxid.
type mirror struct {
	zxid    int64
	session int64 // the last commit's
	nodes   map[string]fakezk.Node
	log     []string // "journal z" and "reply" in the order they happened
}

func (m *mirror) apply(c fakezk.Commit) {
	m.log = append(m.log, fmt.Sprintf("journal %d", c.Zxid))
	if c.Zxid != m.zxid+1 {
		m.log = append(m.log, fmt.Sprintf("gap: %d after %d", c.Zxid, m.zxid))
	}
	m.zxid, m.session = c.Zxid, c.Session
	for _, n := range c.Nodes {
		m.nodes[n.Path] = n
	}
	for _, p := range c.Deleted {
		delete(m.nodes, p)
	}
}

func (m *mirror) sorted() []fakezk.Node {
	var out []fakezk.Node
	for _, p := range slices.Sorted(maps.Keys(m.nodes)) {
		out = append(out, m.nodes[p])
	}
	return out
}

// newJournaled returns a server whose journal replays into a mirror
// seeded from its first snapshot.
func newJournaled(t *testing.T, cfg fakezk.Config) (*fakezk.Server, *mirror) {
	t.Helper()
	m := &mirror{nodes: map[string]fakezk.Node{}}
	cfg.Journal = m.apply
	srv := fakezk.New(cfg)
	z, nodes := srv.Snapshot()
	m.zxid = z
	for _, n := range nodes {
		m.nodes[n.Path] = n
	}
	return srv, m
}

// checkMirror fails unless the journal's replay is the server's snapshot.
func checkMirror(t *testing.T, srv *fakezk.Server, m *mirror, after string) {
	t.Helper()
	z, nodes := srv.Snapshot()
	if z != m.zxid {
		t.Fatalf("after %s: journal at zxid %d, server at %d", after, m.zxid, z)
	}
	if got := m.sorted(); !reflect.DeepEqual(got, nodes) {
		t.Fatalf("after %s: journal replay\n%+v\nserver\n%+v", after, got, nodes)
	}
}

// Every zxid the server takes reaches the journal, once, in order, with
// every node the transaction changed: replaying the commits over the
// first snapshot gives the server's snapshot after each request of every
// kind (writes that fail included), and each commit is journaled before
// its reply reaches the client.
func TestJournalReplaysToSnapshot(t *testing.T) {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv, m := newJournaled(t, fakezk.Config{Clock: clk, ExtendedTypes: true, ContainerCheckInterval: time.Second})
	a := connect(t, srv, fakezk.ConnConfig{Timeout: time.Minute})
	b := connect(t, srv, fakezk.ConnConfig{Timeout: time.Minute})
	checkMirror(t, srv, m, "sessions")
	restricted := []task.ACL{{Perms: task.PermAll, Scheme: "world", ID: "anyone"}, {Perms: task.PermRead, Scheme: "ip", ID: "10.0.0.1"}}
	steps := []struct {
		name string
		c    *fakezk.Conn
		req  task.Request
	}{
		{"create", a, &task.CreateRequest{Path: "/app", Data: []byte("v0"), ACL: task.OpenACL}},
		{"create sequential", a, &task.CreateRequest{Path: "/app/job-", Mode: task.PersistentSequential, ACL: task.OpenACL}},
		{"create ephemeral", b, &task.CreateRequest{Path: "/app/eph", Mode: task.Ephemeral, ACL: task.OpenACL}},
		{"create container", a, &task.CreateRequest{Path: "/box", Mode: task.Container, ACL: task.OpenACL}},
		{"create in container", a, &task.CreateRequest{Path: "/box/x", ACL: task.OpenACL}},
		{"create ttl", a, &task.CreateRequest{Path: "/ttl", Mode: task.PersistentWithTTL, TTL: time.Second, ACL: task.OpenACL}},
		{"set", a, &task.SetDataRequest{Path: "/app", Data: []byte("v1"), Version: -1}},
		{"set acl", a, &task.SetACLRequest{Path: "/app", ACL: restricted, Version: -1}},
		{"failed set", a, &task.SetDataRequest{Path: "/app", Data: []byte("no"), Version: 7}},
		{"failed create", a, &task.CreateRequest{Path: "/none/x", ACL: task.OpenACL}},
		{"delete", a, &task.DeleteRequest{Path: "/box/x", Version: -1}},
		{"multi", a, &task.MultiRequest{Ops: []task.MultiOp{
			&task.CreateRequest{Path: "/m", ACL: task.OpenACL},
			&task.CreateRequest{Path: "/m/1", ACL: task.OpenACL},
			&task.DeleteRequest{Path: "/m/1", Version: -1},
			&task.SetDataRequest{Path: "/m", Data: []byte("m"), Version: -1},
		}}},
		{"failed multi", a, &task.MultiRequest{Ops: []task.MultiOp{
			&task.CreateRequest{Path: "/n", ACL: task.OpenACL},
			&task.DeleteRequest{Path: "/absent", Version: -1},
		}}},
	}
	for _, st := range steps {
		before := len(m.log)
		var replied bool
		st.c.Do(st.req, func(task.Response) {
			replied = true
			m.log = append(m.log, "reply")
		}, nil)
		if !replied {
			t.Fatalf("%s: no reply", st.name)
		}
		if got := m.log[before:]; len(got) != 2 || got[0] != fmt.Sprintf("journal %d", srv.Zxid()) || got[1] != "reply" {
			t.Fatalf("%s: journal and reply in the order %v, want the commit of zxid %d then the reply", st.name, got, srv.Zxid())
		}
		checkMirror(t, srv, m, st.name)
	}
	// Not a client's: an operator's writes, a session's close (its
	// ephemeral goes), the container manager's deletions.
	if err := srv.AdminCreate("/op", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	checkMirror(t, srv, m, "admin create")
	b.Close()
	checkMirror(t, srv, m, "session close")
	clk.Advance(3 * time.Second)
	if _, ok := srv.NodeStat("/box"); ok {
		t.Fatal("container /box not reaped: the test does not reach the container manager")
	}
	checkMirror(t, srv, m, "container manager")
	for _, l := range m.log {
		if len(l) > 3 && l[:3] == "gap" {
			t.Fatal(l)
		}
	}
}

// Each commit names the session that made it, as ZooKeeper's txn header
// does: a session's create, delete (of another session's ephemeral too)
// and failed write, its own creation and its closing (which deletes its
// ephemerals); an operator's change made for a session (AdminCreate's
// ephemeral) names that session, and one made with none, like the
// container manager's deletions, names none (0).
func TestJournalNamesTheSession(t *testing.T) {
	clk := fakezk.NewClock(fakezk.Epoch)
	var commits []fakezk.Commit
	srv := fakezk.New(fakezk.Config{Clock: clk, ContainerCheckInterval: time.Second, Journal: func(c fakezk.Commit) { commits = append(commits, c) }})
	last := func(what string) fakezk.Commit {
		t.Helper()
		if len(commits) == 0 || commits[len(commits)-1].Zxid != srv.Zxid() {
			t.Fatalf("%s: no commit of zxid %d", what, srv.Zxid())
		}
		return commits[len(commits)-1]
	}
	a := connect(t, srv, fakezk.ConnConfig{})
	if got := last("a's creation").Session; got != a.SessionID() {
		t.Fatalf("a's creation: session %#x, want a's %#x", got, a.SessionID())
	}
	b := connect(t, srv, fakezk.ConnConfig{})
	for _, st := range []struct {
		name string
		c    *fakezk.Conn
		req  task.Request
		err  error
		del  string // the path the commit deletes
	}{
		{"create", a, &task.CreateRequest{Path: "/x", ACL: task.OpenACL}, nil, ""},
		{"create ephemeral", a, &task.CreateRequest{Path: "/x/a", Mode: task.Ephemeral, ACL: task.OpenACL}, nil, ""},
		{"failed write", b, &task.SetDataRequest{Path: "/none", Version: -1}, task.ErrNoNode, ""},
		{"delete of another session's ephemeral", b, &task.DeleteRequest{Path: "/x/a", Version: 0}, nil, "/x/a"},
		{"create container", b, &task.CreateRequest{Path: "/box", Mode: task.Container, ACL: task.OpenACL}, nil, ""},
		{"create in container", b, &task.CreateRequest{Path: "/box/y", ACL: task.OpenACL}, nil, ""},
		{"delete in container", b, &task.DeleteRequest{Path: "/box/y", Version: -1}, nil, "/box/y"},
		{"ephemeral to go with b", b, &task.CreateRequest{Path: "/x/b", Mode: task.Ephemeral, ACL: task.OpenACL}, nil, ""},
	} {
		if r := do(st.c, st.req); !errors.Is(r.Err, st.err) {
			t.Fatalf("%s: %v, want %v", st.name, r.Err, st.err)
		}
		c := last(st.name)
		if c.Session != st.c.SessionID() {
			t.Fatalf("%s: session %#x, want %#x", st.name, c.Session, st.c.SessionID())
		}
		if st.del != "" && !slices.Equal(c.Deleted, []string{st.del}) {
			t.Fatalf("%s: deleted %v, want [%s]", st.name, c.Deleted, st.del)
		}
	}
	orphan := srv.OrphanSession(time.Minute)
	if got := last("an orphan session's creation").Session; got != orphan {
		t.Fatalf("orphan session's creation: session %#x, want %#x", got, orphan)
	}
	if err := srv.AdminCreate("/x/op", nil, orphan); err != nil {
		t.Fatal(err)
	}
	if got := last("admin create for a session").Session; got != orphan {
		t.Fatalf("admin create of an ephemeral for %#x: session %#x", orphan, got)
	}
	if err := srv.AdminDelete("/x/op"); err != nil {
		t.Fatal(err)
	}
	if got := last("admin delete"); got.Session != 0 || !slices.Equal(got.Deleted, []string{"/x/op"}) {
		t.Fatalf("admin delete: session %#x, deleted %v; want 0, [/x/op]", got.Session, got.Deleted)
	}
	bID := b.SessionID()
	b.Close()
	if got := last("b's close"); got.Session != bID || !slices.Equal(got.Deleted, []string{"/x/b"}) {
		t.Fatalf("b's close: session %#x, deleted %v; want %#x, [/x/b]", got.Session, got.Deleted, bID)
	}
	clk.Advance(3 * time.Second)
	if got := last("container manager"); got.Session != 0 || !slices.Equal(got.Deleted, []string{"/box"}) {
		t.Fatalf("container manager: session %#x, deleted %v; want 0, [/box]", got.Session, got.Deleted)
	}
}

// A server restored from a snapshot has the tree and the zxid: data,
// ACLs, every Stat field, sequence counters (the next sequential name
// continues), containers. Ephemerals go, in one transaction per owner
// session that the journal hears of.
func TestRestoreContinues(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	a := connect(t, srv, fakezk.ConnConfig{})
	for _, req := range []task.Request{
		&task.CreateRequest{Path: "/q", Data: []byte("queue"), ACL: task.OpenACL},
		&task.CreateRequest{Path: "/q/j-", Mode: task.PersistentSequential, ACL: task.OpenACL},
		&task.CreateRequest{Path: "/q/j-", Mode: task.PersistentSequential, ACL: task.OpenACL},
		&task.CreateRequest{Path: "/q/e-", Mode: task.EphemeralSequential, ACL: task.OpenACL},
		&task.SetDataRequest{Path: "/q", Data: []byte("queue2"), Version: 0},
		&task.SetACLRequest{Path: "/q/j-0000000000", ACL: []task.ACL{task.DigestACL(task.PermAll, "u", "p")}, Version: -1},
	} {
		if r := do(a, req); r.Err != nil {
			t.Fatalf("%s: %v", req.OpName(), r.Err)
		}
	}
	z, nodes := srv.Snapshot()
	m := &mirror{nodes: map[string]fakezk.Node{}, zxid: z}
	for _, n := range nodes {
		m.nodes[n.Path] = n
	}
	back, err := fakezk.Restore(fakezk.Config{Journal: m.apply}, z, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Zxid(); got != z+1 {
		t.Fatalf("restored zxid %d, want %d (the snapshot's and one for the gone session)", got, z+1)
	}
	if _, ok := back.NodeStat("/q/e-0000000002"); ok {
		t.Fatal("ephemeral of a session that is gone restored")
	}
	if m.session != a.SessionID() {
		t.Fatalf("the gone session's closing names session %#x, want its own %#x", m.session, a.SessionID())
	}
	checkMirror(t, back, m, "restore")
	if err := back.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	want, _ := srv.NodeStat("/q/j-0000000000")
	if got, _ := back.NodeStat("/q/j-0000000000"); got != want {
		t.Fatalf("stat %+v, want %+v", got, want)
	}
	c := connect(t, back, fakezk.ConnConfig{})
	r := do(c, &task.CreateRequest{Path: "/q/j-", Mode: task.PersistentSequential, ACL: task.OpenACL})
	if r.Err != nil || r.Path != "/q/j-0000000003" {
		t.Fatalf("sequential create after restore: %q %v, want /q/j-0000000003", r.Path, r.Err)
	}
	if r := do(c, &task.GetDataRequest{Path: "/q/j-0000000000"}); !errors.Is(r.Err, task.ErrNoAuth) {
		t.Fatalf("get under a digest ACL: %v, want NoAuth (the ACL restored)", r.Err)
	}
	if r := do(c, &task.GetDataRequest{Path: "/q"}); string(r.Data) != "queue2" || r.Stat.Version != 1 {
		t.Fatalf("get /q: %q version %d", r.Data, r.Stat.Version)
	}
	checkMirror(t, back, m, "create after restore")
}

// Nodes that do not make a tree are refused with ErrBadSnapshot, naming
// what is wrong.
func TestRestoreRefusesInconsistentTree(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	if err := srv.AdminCreate("/a", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	z, good := srv.Snapshot()
	edit := func(f func([]fakezk.Node) []fakezk.Node) []fakezk.Node {
		return f(slices.Clone(good))
	}
	find := func(ns []fakezk.Node, p string) int {
		return slices.IndexFunc(ns, func(n fakezk.Node) bool { return n.Path == p })
	}
	for _, tc := range []struct {
		name  string
		zxid  int64
		nodes []fakezk.Node
	}{
		{"no root", z, edit(func(ns []fakezk.Node) []fakezk.Node { return slices.Delete(ns, find(ns, "/"), find(ns, "/")+1) })},
		{"orphan", z, append(edit(func(ns []fakezk.Node) []fakezk.Node { return ns }), fakezk.Node{Path: "/x/y"})},
		{"twice", z, append(edit(func(ns []fakezk.Node) []fakezk.Node { return ns }), good[find(good, "/a")])},
		{"bad path", z, append(edit(func(ns []fakezk.Node) []fakezk.Node { return ns }), fakezk.Node{Path: "a/b"})},
		{"zxid ahead", z - 1, good},
		{"numChildren", z, edit(func(ns []fakezk.Node) []fakezk.Node { ns[find(ns, "/")].Stat.NumChildren = 9; return ns })},
		{"dataLength", z, edit(func(ns []fakezk.Node) []fakezk.Node { ns[find(ns, "/a")].Stat.DataLength = 5; return ns })},
	} {
		if _, err := fakezk.Restore(fakezk.Config{}, tc.zxid, tc.nodes); !errors.Is(err, fakezk.ErrBadSnapshot) {
			t.Errorf("%s: Restore = %v, want ErrBadSnapshot", tc.name, err)
		}
	}
	if _, err := fakezk.Restore(fakezk.Config{}, z, good); err != nil {
		t.Fatalf("the unedited snapshot: %v", err)
	}
}

// A connection that authenticates as Config.SuperDigest's user passes
// every ACL; with another password it does not.
func TestSuperDigest(t *testing.T) {
	srv := fakezk.New(fakezk.Config{SuperDigest: task.DigestID("super:test")})
	owner := connect(t, srv, fakezk.ConnConfig{Auth: []task.AuthInfo{{Scheme: "digest", Auth: []byte("u:p")}}})
	if r := do(owner, &task.CreateRequest{Path: "/s", Data: []byte("x"), ACL: []task.ACL{task.DigestACL(task.PermAll, "u", "p")}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	super := connect(t, srv, fakezk.ConnConfig{Auth: []task.AuthInfo{{Scheme: "digest", Auth: []byte("super:test")}}})
	if r := do(super, &task.GetDataRequest{Path: "/s"}); r.Err != nil {
		t.Fatalf("super get: %v", r.Err)
	}
	other := connect(t, srv, fakezk.ConnConfig{Auth: []task.AuthInfo{{Scheme: "digest", Auth: []byte("super:wrong")}}})
	if r := do(other, &task.GetDataRequest{Path: "/s"}); !errors.Is(r.Err, task.ErrNoAuth) {
		t.Fatalf("wrong password get: %v, want NoAuth", r.Err)
	}
	if err := (&fakezk.Config{SuperDigest: "nocolon"}).Validate(); err == nil {
		t.Fatal("SuperDigest without a colon validated")
	}
}

// Config.MinSessionTimeout and MaxSessionTimeout bound what a session is
// granted; unset, the bounds are 2 and 20 ticks.
func TestSessionTimeoutBounds(t *testing.T) {
	tick := 100 * time.Millisecond
	def := fakezk.New(fakezk.Config{TickTime: tick})
	set := fakezk.New(fakezk.Config{TickTime: tick, MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute})
	for _, tc := range []struct {
		srv       *fakezk.Server
		ask, want time.Duration
	}{
		{def, 0, 2 * tick}, {def, time.Hour, 20 * tick}, {def, time.Second, time.Second},
		{set, 0, time.Second}, {set, 30 * time.Second, 30 * time.Second}, {set, time.Hour, time.Minute},
	} {
		if got := tc.srv.NegotiateTimeout(tc.ask); got != tc.want {
			t.Errorf("ask %s: granted %s, want %s", tc.ask, got, tc.want)
		}
	}
	var granted time.Duration
	c := set.Connect(fakezk.ConnConfig{Timeout: time.Hour})
	if err := c.Start(func(ev task.Event) {
		if ev.State == task.StateConnected {
			granted = ev.Timeout
		}
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if granted != time.Minute {
		t.Errorf("session granted %s, want the maximum, 1m", granted)
	}
	for _, cfg := range []fakezk.Config{
		{MinSessionTimeout: time.Minute, MaxSessionTimeout: time.Second},
		{TickTime: tick, MinSessionTimeout: 3 * time.Second},        // above the default maximum, 2s
		{TickTime: tick, MaxSessionTimeout: 100 * time.Millisecond}, // below the default minimum, 200ms
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("min %s max %s tick %s validated", cfg.MinSessionTimeout, cfg.MaxSessionTimeout, cfg.TickTime)
		}
	}
}

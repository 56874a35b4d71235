package fakezk_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// do sends req on c (an automatic-mode Conn) and returns the response.
func do(c *fakezk.Conn, req task.Request) task.Response {
	var got task.Response
	c.Do(req, func(r task.Response) { got = r }, nil)
	return got
}

func connect(t *testing.T, srv *fakezk.Server, cfg fakezk.ConnConfig) *fakezk.Conn {
	t.Helper()
	c := srv.Connect(cfg)
	if err := c.Start(func(task.Event) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A credential of a scheme the server has no provider for is refused: a
// real server answers the auth packet with AuthFailed and closes the
// connection; the fake refuses to start.
func TestAuthUnknownSchemeFailsStart(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	c := srv.Connect(fakezk.ConnConfig{Auth: []task.AuthInfo{
		{Scheme: "digest", Auth: []byte("alice:pw")},
		{Scheme: "sasl", Auth: []byte("alice")},
	}})
	err := c.Start(func(task.Event) { t.Error("event from a refused connection") })
	if !errors.Is(err, task.CodeAuthFailed) {
		t.Fatalf("Start = %v, want AuthFailed", err)
	}
	if len(srv.Sessions()) != 0 {
		t.Fatalf("sessions %v after a refused start", srv.Sessions())
	}
	c.Close()
}

// ConnConfig.IP is the address ip entries match; the default is loopback.
func TestClientIP(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	admin := connect(t, srv, fakezk.ConnConfig{})
	acl := []task.ACL{{Perms: task.PermRead, Scheme: "ip", ID: "10.0.0.0/8"}, {Perms: task.PermAdmin, Scheme: "ip", ID: "127.0.0.1"}}
	if r := do(admin, &task.CreateRequest{Path: "/a", ACL: acl}); r.Err != nil {
		t.Fatal(r.Err)
	}
	inside := connect(t, srv, fakezk.ConnConfig{IP: "10.9.8.7"})
	outside := connect(t, srv, fakezk.ConnConfig{IP: "11.0.0.1"})
	v6 := connect(t, srv, fakezk.ConnConfig{IP: "::1"})
	for _, tc := range []struct {
		name string
		c    *fakezk.Conn
		get  error
		adm  error
	}{
		{"loopback", admin, task.ErrNoAuth, nil},
		{"10.9.8.7", inside, nil, task.ErrNoAuth},
		{"11.0.0.1", outside, task.ErrNoAuth, task.ErrNoAuth},
		{"::1 (3.8 matches no IPv6 address)", v6, task.ErrNoAuth, task.ErrNoAuth},
	} {
		if err := do(tc.c, &task.GetDataRequest{Path: "/a"}).Err; err != tc.get {
			t.Errorf("%s: get = %v, want %v", tc.name, err, tc.get)
		}
		if err := do(tc.c, &task.SetACLRequest{Path: "/a", ACL: acl, Version: -1}).Err; err != tc.adm {
			t.Errorf("%s: setACL = %v, want %v", tc.name, err, tc.adm)
		}
	}
}

// The operator's hand (Admin*) is the super user: no ACL stops it.
func TestAdminIgnoresACL(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	c := connect(t, srv, fakezk.ConnConfig{})
	if r := do(c, &task.CreateRequest{Path: "/locked", ACL: []task.ACL{{Perms: 0, Scheme: "world", ID: "anyone"}}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := srv.AdminCreate("/locked/child", []byte("x"), 0); err != nil {
		t.Fatalf("AdminCreate under a parent without CREATE: %v", err)
	}
	if err := srv.AdminDelete("/locked/child"); err != nil {
		t.Fatalf("AdminDelete under a parent without DELETE: %v", err)
	}
}

// AdminSetACL is a zkCli setAcl by the super user: it replaces the ACL
// whatever its version, moves Aversion, fires no watch, and from then on
// the clients get what the new ACL grants: a watch set before, on a node
// the session may no longer READ, is withheld (the delete is not told).
func TestAdminSetACL(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	c := connect(t, srv, fakezk.ConnConfig{})
	if r := do(c, &task.CreateRequest{Path: "/n", ACL: []task.ACL{{Perms: 0, Scheme: "world", ID: "anyone"}}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := srv.AdminSetACL("/n", task.OpenACL); err != nil {
		t.Fatalf("AdminSetACL on a node whose ACL grants no ADMIN: %v", err)
	}
	var events []task.Event
	c.Do(&task.ExistsRequest{Path: "/n", Watch: true}, func(task.Response) {}, func(ev task.Event) { events = append(events, ev) })
	if r := do(c, &task.GetDataRequest{Path: "/n"}); r.Err != nil {
		t.Fatalf("get after the ACL opened: %v", r.Err)
	}
	closed := []task.ACL{task.DigestACL(task.PermAll, "operator", "secret")}
	if err := srv.AdminSetACL("/n", closed); err != nil {
		t.Fatal(err)
	}
	if acl, ok := srv.NodeACL("/n"); !ok || len(acl) != 1 || acl[0] != closed[0] {
		t.Fatalf("NodeACL = %v, %v; want %v", acl, ok, closed)
	}
	if st, _ := srv.NodeStat("/n"); st.Aversion != 2 {
		t.Fatalf("Aversion = %d after two setAcl, want 2", st.Aversion)
	}
	if r := do(c, &task.GetDataRequest{Path: "/n"}); !errors.Is(r.Err, task.ErrNoAuth) {
		t.Fatalf("get of a closed node = %v, want NoAuth", r.Err)
	}
	if err := srv.AdminDelete("/n"); err != nil {
		t.Fatal(err)
	}
	if len(events) != 0 {
		t.Fatalf("the delete of a node the session may not read was told: %v", events)
	}
	if err := srv.AdminSetACL("/n", task.OpenACL); !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("AdminSetACL of a missing node = %v, want ErrNoNode", err)
	}
	if _, ok := srv.NodeACL("/n"); ok {
		t.Fatal("NodeACL of a missing node reports one")
	}
}

// /zookeeper/config stays read-only to clients after a restart and a wipe
// (the tree is made again as a fresh server makes it), and, as a real
// server's super user may, the operator creates and deletes under it.
func TestConfigNodeReadOnly(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	for _, fault := range []func(){func() {}, srv.Wipe} {
		fault()
		c := connect(t, srv, fakezk.ConnConfig{}) // a session of the server as it is now
		if r := do(c, &task.SetDataRequest{Path: "/zookeeper/config", Version: -1}); !errors.Is(r.Err, task.ErrNoAuth) {
			t.Fatalf("set /zookeeper/config: %v, want NoAuth", r.Err)
		}
		if r := do(c, &task.GetACLRequest{Path: "/zookeeper/config"}); r.Err != nil || r.Stat.Aversion != -1 || len(r.ACL) != 1 || r.ACL[0].Perms != task.PermRead {
			t.Fatalf("getACL /zookeeper/config: %v %+v, %v", r.ACL, r.Stat, r.Err)
		}
	}
	if err := srv.AdminCreate("/zookeeper/config/x", nil, 0); err != nil {
		t.Fatalf("AdminCreate under /zookeeper/config: %v", err)
	}
	if err := srv.AdminDelete("/zookeeper/config/x"); err != nil {
		t.Fatalf("AdminDelete under /zookeeper/config: %v", err)
	}
}

// Credentials are presented on every connect: after a partition longer
// than the session timeout the new session has them too.
func TestAuthSurvivesExpiry(t *testing.T) {
	srv, clk := detServer(3)
	alice := srv.Connect(fakezk.ConnConfig{Timeout: 4e9, Auth: []task.AuthInfo{{Scheme: "digest", Auth: []byte("alice:pw")}}})
	r := &recorder{}
	if err := alice.Start(r.events); err != nil {
		t.Fatal(err)
	}
	var resp task.Response
	alice.Do(&task.CreateRequest{Path: "/a", ACL: []task.ACL{{Perms: task.PermAll, Scheme: "auth"}}}, func(x task.Response) { resp = x }, nil)
	srv.RunUntilIdle()
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	old := alice.SessionID()
	srv.Partition(alice, 10e9, false)
	srv.RunUntilIdle()
	clk.Advance(10e9)
	srv.RunUntilIdle()
	if alice.SessionID() == old {
		t.Fatal("session did not expire")
	}
	alice.Do(&task.GetDataRequest{Path: "/a"}, func(x task.Response) { resp = x }, nil)
	srv.RunUntilIdle()
	if resp.Err != nil {
		t.Fatalf("get in the new session: %v", resp.Err)
	}
	if err := srv.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	alice.Close()
	srv.RunUntilIdle()
}

package wire_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkflow/zkflow/fakezk"
)

var open = gozk.WorldACL(gozk.PermAll)

// TestGoZookeeperOps runs every request go-zookeeper can send through the
// wire and checks each answer.
func TestGoZookeeperOps(t *testing.T) {
	r := start(t, fakezk.Config{ExtendedTypes: true})
	c, _ := r.dial(t)

	// create, all plain modes; get; exists; set.
	if p, err := c.Create("/a", []byte("x"), 0, open); err != nil || p != "/a" {
		t.Fatalf("create: %q %v", p, err)
	}
	if _, err := c.Create("/a", nil, 0, open); !errors.Is(err, gozk.ErrNodeExists) {
		t.Fatalf("create again: %v", err)
	}
	if _, err := c.Create("/none/x", nil, 0, open); !errors.Is(err, gozk.ErrNoNode) {
		t.Fatalf("create without parent: %v", err)
	}
	if _, err := c.Create("bad", nil, 0, open); !errors.Is(err, gozk.ErrInvalidPath) && !errors.Is(err, gozk.ErrBadArguments) {
		t.Fatalf("create of a bad path: %v", err)
	}
	seq, err := c.Create("/a/s-", nil, gozk.FlagSequence, open)
	if err != nil || seq != "/a/s-0000000000" {
		t.Fatalf("sequential: %q %v", seq, err)
	}
	eph, err := c.Create("/a/e", nil, gozk.FlagEphemeral, open)
	if err != nil || eph != "/a/e" {
		t.Fatalf("ephemeral: %q %v", eph, err)
	}
	if _, err := c.Create("/a/e/x", nil, 0, open); !errors.Is(err, gozk.ErrNoChildrenForEphemerals) {
		t.Fatalf("child of an ephemeral: %v", err)
	}
	data, st, err := c.Get("/a")
	if err != nil || string(data) != "x" || st.Version != 0 || st.DataLength != 1 || st.NumChildren != 2 {
		t.Fatalf("get: %q %+v %v", data, st, err)
	}
	_, est, err := c.Get("/a/e")
	if err != nil || est.EphemeralOwner != c.SessionID() {
		t.Fatalf("ephemeral owner %#x, session %#x, %v", est.EphemeralOwner, c.SessionID(), err)
	}
	if ok, st2, err := c.Exists("/a"); !ok || err != nil || *st2 != *st {
		t.Fatalf("exists: %v %+v %v", ok, st2, err)
	}
	if ok, _, err := c.Exists("/nope"); ok || err != nil {
		t.Fatalf("exists of a missing node: %v %v", ok, err)
	}
	st, err = c.Set("/a", []byte("yy"), 0)
	if err != nil || st.Version != 1 || st.DataLength != 2 {
		t.Fatalf("set: %+v %v", st, err)
	}
	if _, err := c.Set("/a", nil, 0); !errors.Is(err, gozk.ErrBadVersion) {
		t.Fatalf("set with a stale version: %v", err)
	}

	// children (getChildren2), sync.
	kids, st, err := c.Children("/a")
	slices.Sort(kids)
	if err != nil || !slices.Equal(kids, []string{"e", "s-0000000000"}) || st.NumChildren != 2 {
		t.Fatalf("children: %v %+v %v", kids, st, err)
	}
	if p, err := c.Sync("/a"); err != nil || p != "/a" {
		t.Fatalf("sync: %q %v", p, err)
	}

	// container and TTL nodes (opcodes 19 and 21).
	if p, err := c.CreateContainer("/box", nil, gozk.FlagTTL&0|4, open); err != nil || p != "/box" {
		t.Fatalf("container: %q %v", p, err)
	}
	if p, err := c.CreateTTL("/ttl", nil, gozk.FlagTTL, open, time.Minute); err != nil || p != "/ttl" {
		t.Fatalf("ttl: %q %v", p, err)
	}

	// ACLs.
	acl, st, err := c.GetACL("/a")
	if err != nil || !slices.Equal(acl, open) || st.Aversion != 0 {
		t.Fatalf("getACL: %v %+v %v", acl, st, err)
	}
	readOnly := gozk.WorldACL(gozk.PermRead | gozk.PermAdmin)
	if st, err := c.SetACL("/a", readOnly, 0); err != nil || st.Aversion != 1 {
		t.Fatalf("setACL: %+v %v", st, err)
	}
	if _, err := c.Set("/a", nil, -1); !errors.Is(err, gozk.ErrNoAuth) {
		t.Fatalf("set without WRITE: %v", err)
	}
	if _, err := c.SetACL("/a", open, 0); !errors.Is(err, gozk.ErrBadVersion) {
		t.Fatalf("setACL with a stale version: %v", err)
	}
	if _, err := c.SetACL("/a", nil, -1); !errors.Is(err, gozk.ErrInvalidACL) {
		t.Fatalf("setACL with an empty list: %v", err)
	}

	// delete (DELETE on the parent again).
	if _, err := c.SetACL("/a", open, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/a", -1); !errors.Is(err, gozk.ErrNotEmpty) {
		t.Fatalf("delete of a parent: %v", err)
	}
	if err := c.Delete("/a/e", 5); !errors.Is(err, gozk.ErrBadVersion) {
		t.Fatalf("delete with a bad version: %v", err)
	}
	if err := c.Delete("/a/e", 0); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := c.Delete("/a/e", -1); !errors.Is(err, gozk.ErrNoNode) {
		t.Fatalf("delete twice: %v", err)
	}
}

// TestGoZookeeperMulti checks a multi's results, and a failed multi's
// per-op errors as go-zookeeper decodes a real server's (its
// TestIntegration_MultiFailures).
func TestGoZookeeperMulti(t *testing.T) {
	r := start(t, fakezk.Config{})
	c, _ := r.dial(t)
	res, err := c.Multi(
		&gozk.CreateRequest{Path: "/m", Data: []byte("1"), Acl: open},
		&gozk.SetDataRequest{Path: "/m", Data: []byte("2"), Version: 0},
		&gozk.CheckVersionRequest{Path: "/m", Version: 1},
		&gozk.CreateRequest{Path: "/m/k", Acl: open},
		&gozk.DeleteRequest{Path: "/m/k", Version: 0},
	)
	if err != nil || len(res) != 5 || res[0].String != "/m" || res[3].String != "/m/k" || res[1].Stat == nil || res[1].Stat.Version != 1 {
		t.Fatalf("multi: %+v %v", res, err)
	}
	for i, x := range res {
		if x.Error != nil {
			t.Errorf("op %d: %v", i, x.Error)
		}
	}
	res, err = c.Multi(
		&gozk.CreateRequest{Path: "/n", Acl: open},
		&gozk.CreateRequest{Path: "/m", Acl: open},
		&gozk.DeleteRequest{Path: "/m", Version: -1},
	)
	if !errors.Is(err, gozk.ErrNodeExists) || len(res) != 3 {
		t.Fatalf("failed multi: %+v %v", res, err)
	}
	if res[0].Error != nil || !errors.Is(res[1].Error, gozk.ErrNodeExists) || !errors.Is(res[2].Error, gozk.ErrAPIError) && res[2].Error == nil {
		t.Fatalf("failed multi's results: %v %v %v", res[0].Error, res[1].Error, res[2].Error)
	}
	if ok, _, _ := c.Exists("/n"); ok {
		t.Fatal("a failed multi left its first create")
	}
}

// TestGoZookeeperWatches checks the three kinds of watch and the order of
// a session's own notification and its write's reply.
func TestGoZookeeperWatches(t *testing.T) {
	r := start(t, fakezk.Config{})
	c, _ := r.dial(t)
	other, _ := r.dial(t)

	_, _, created, err := c.ExistsW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/w", []byte("0"), 0, open); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, created); ev.Type != gozk.EventNodeCreated || ev.Path != "/w" {
		t.Fatalf("exists watch: %+v", ev)
	}
	_, _, changed, err := c.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, kids, err := c.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Set("/w", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, changed); ev.Type != gozk.EventNodeDataChanged || ev.Path != "/w" {
		t.Fatalf("data watch: %+v", ev)
	}
	if _, err := other.Create("/w/k", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, kids); ev.Type != gozk.EventNodeChildrenChanged || ev.Path != "/w" {
		t.Fatalf("child watch: %+v", ev)
	}
	// Own write: the notification arrives before the reply, so it is
	// already there when Set returns.
	_, _, mine, err := c.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/w", nil, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-mine:
		if ev.Type != gozk.EventNodeDataChanged {
			t.Fatalf("own watch: %+v", ev)
		}
	default:
		t.Fatal("own write's notification not delivered before its reply")
	}
}

// TestGoZookeeperAuth checks digest auth against a digest ACL, and an
// unknown scheme closing the connection with AuthFailed.
func TestGoZookeeperAuth(t *testing.T) {
	r := start(t, fakezk.Config{})
	c, _ := r.dial(t)
	if err := c.AddAuth("digest", []byte("user:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/secret", []byte("s"), 0, gozk.DigestACL(gozk.PermAll, "user", "pw")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get("/secret"); err != nil {
		t.Fatalf("owner's get: %v", err)
	}
	o, _ := r.dial(t)
	if _, _, err := o.Get("/secret"); !errors.Is(err, gozk.ErrNoAuth) {
		t.Fatalf("stranger's get: %v", err)
	}
	if err := o.AddAuth("nosuch", []byte("x")); !errors.Is(err, gozk.ErrAuthFailed) {
		t.Fatalf("unknown scheme: %v", err)
	}
}

// cons as go-zookeeper's FLWCons parses it: one client per session, with
// its session id, timeout and last operation.
func TestGoZookeeperCons(t *testing.T) {
	r := start(t, fakezk.Config{})
	a, _ := r.dial(t)
	b, _ := r.dial(t)
	if _, _, err := a.Get("/"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Exists("/x"); err != nil {
		t.Fatal(err)
	}
	got, _ := gozk.FLWCons([]string{r.addr}, 5*time.Second) // the asking connection's brief line does not parse: not ok, as on a real server
	if len(got) != 1 || got[0].Clients == nil {
		t.Fatalf("FLWCons: %+v", got)
	}
	want := map[int64]string{a.SessionID(): "GETD", b.SessionID(): "EXIS"}
	for _, c := range got[0].Clients {
		op, ok := want[c.SessionID]
		// A ping of the client's own may have come after its request.
		if !ok || (c.LastOperation != op && c.LastOperation != "PING") || c.Timeout <= 0 || c.Received < 2 || c.Sent < 2 {
			t.Errorf("client %+v: want one of %v", c, want)
		}
		delete(want, c.SessionID)
	}
	if len(want) != 0 {
		t.Errorf("sessions missing from cons: %v", want)
	}
}

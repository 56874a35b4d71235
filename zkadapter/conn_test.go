package zkadapter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no servers", Config{}, "Servers"},
		{"no port", Config{Servers: []string{"localhost"}}, "Servers[0]"},
		{"bad port", Config{Servers: []string{"a:1", "b:99999"}}, "Servers[1]"},
		{"no host", Config{Servers: []string{":2181"}}, "Servers[0]"},
		{"negative timeout", Config{Servers: []string{"a:1"}, SessionTimeout: -time.Second}, "SessionTimeout"},
		{"negative connect timeout", Config{Servers: []string{"a:1"}, ConnectTimeout: -1}, "ConnectTimeout"},
		{"negative data size", Config{Servers: []string{"a:1"}, MaxDataSize: -1}, "MaxDataSize"},
		{"negative dial timeout", Config{Servers: []string{"a:1"}, DialTimeout: -1}, "DialTimeout"},
		{"ok", Config{Servers: []string{"127.0.0.1:2181", "[::1]:2181"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.field == "" {
				// Two servers: the default DialTimeout is 10s + 2 x 1s.
				if err != nil || tc.cfg.SessionTimeout != DefaultSessionTimeout || tc.cfg.MaxDataSize != task.MaxDataSize ||
					tc.cfg.DialTimeout != 12*time.Second {
					t.Fatalf("Validate = %v, cfg %+v", err, tc.cfg)
				}
				return
			}
			var ce *ConfigError
			if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("Validate = %v, want a ConfigError on %s", err, tc.field)
			}
			if _, err := New(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New = %v", err)
			}
		})
	}
}

// The default DialTimeout (the session timeout plus one ConnectTimeout
// per server) saturates: a ConnectTimeout meant as no bound
// (math.MaxInt64) wrapped the sum negative, and Validate accepted a
// Config whose Dial gave up at once (this test failed on the code before
// the fix).
func TestDefaultDialTimeoutSaturates(t *testing.T) {
	for _, n := range []int{1, 3} {
		cfg := Config{Servers: make([]string, n), ConnectTimeout: math.MaxInt64}
		for i := range cfg.Servers {
			cfg.Servers[i] = fmt.Sprintf("127.0.0.1:%d", 2181+i)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%d servers: Validate = %v", n, err)
		}
		if cfg.DialTimeout != math.MaxInt64 {
			t.Errorf("%d servers: DialTimeout %v, want the largest Duration", n, cfg.DialTimeout)
		}
	}
}

// An address where nothing listens: Dial gives up at the caller's deadline
// with an error that says why.
func TestDialUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Dial(ctx, Config{Servers: []string{addr}, Logger: testLogger(t)})
	if !errors.Is(err, ErrNoSession) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v, want ErrNoSession and DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "refused") {
		t.Errorf("error does not say why: %v", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("Dial took %s, past its deadline", el)
	}
}

// A server that is not ZooKeeper (it closes every connection): the error
// names the failed handshake.
func TestDialNotZooKeeper(t *testing.T) {
	addr := acceptEach(t, listen(t), func(nc net.Conn) {
		nc.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
		nc.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := Dial(ctx, Config{Servers: []string{addr}, Logger: testLogger(t)})
	if !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), "handshake") {
		t.Fatalf("Dial = %v, want ErrNoSession naming the handshake", err)
	}
}

// Without a session: bad requests get their typed errors, good ones
// ErrNotSent, and Close reports StateClosed last.
func TestNoSession(t *testing.T) {
	c, err := New(Config{Servers: []string{"127.0.0.1:1"}, Logger: testLogger(t), ConnectTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	if err := c.Start(r.onEvent); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(r.onEvent); err == nil {
		t.Error("second Start did not fail")
	}
	for _, tc := range []struct {
		req  task.Request
		want error
	}{
		{&task.GetDataRequest{Path: "a"}, task.ErrInvalidPath},
		{&task.CreateRequest{Path: "/a/", Mode: task.Persistent}, task.ErrInvalidPath},
		{&task.CreateRequest{Path: "/a", Mode: 42}, task.ErrInvalidArgument},
		{&task.CreateRequest{Path: "/a", Mode: task.PersistentWithTTL}, task.ErrInvalidArgument},
		{&task.SetDataRequest{Path: "/a", Data: make([]byte, task.MaxDataSize+1)}, task.ErrDataTooLarge},
		{nil, task.ErrInvalidArgument},
		{(*task.DeleteRequest)(nil), task.ErrInvalidArgument},
		{&task.MultiRequest{Ops: []task.MultiOp{nil}}, task.ErrInvalidArgument},
		{&task.CheckRequest{Path: "/a", Version: 1}, task.ErrUnimplemented},
		{&task.GetDataRequest{Path: "/a"}, task.ErrNotSent},
	} {
		ch := make(chan task.Response, 2)
		c.Do(tc.req, func(resp task.Response) { ch <- resp }, nil)
		resp := <-ch
		if !errors.Is(resp.Err, tc.want) {
			t.Errorf("Do(%#v) = %v, want %v", tc.req, resp.Err, tc.want)
		}
	}
	c.Close()
	c.Close()
	evs := r.sessionEvents()
	if len(evs) != 1 || evs[0].State != task.StateClosed {
		t.Fatalf("events = %v, want just Closed", evs)
	}
	ch := make(chan task.Response, 1)
	c.Do(&task.GetDataRequest{Path: "/a"}, func(resp task.Response) { ch <- resp }, nil)
	if resp := <-ch; resp.Err != task.ErrClosed {
		t.Fatalf("Do after Close = %v", resp.Err)
	}
}

func TestOperations(t *testing.T) {
	opts := serverOpts
	opts.ExtendedTypes = true
	srv := zkserver.Standalone(t, opts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	ev, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	if ev.SessionID == 0 || ev.Timeout != 4*time.Second || ev.SessionID != c.SessionID() {
		t.Fatalf("connected event = %+v (session %#x)", ev, c.SessionID())
	}

	resp := mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/ops", Data: []byte("x"), Mode: task.Persistent, ACL: task.OpenACL}, nil))
	if resp.Path != "/ops" || resp.Stat.Czxid == 0 || resp.Stat.Czxid != resp.Stat.Mzxid || resp.Stat.DataLength != 1 {
		t.Fatalf("create = %q %+v", resp.Path, resp.Stat)
	}
	mustErr(t, do(t, c, r, &task.CreateRequest{Path: "/ops", Mode: task.Persistent, ACL: task.OpenACL}, nil), task.ErrNodeExists)
	mustErr(t, do(t, c, r, &task.CreateRequest{Path: "/nope/x", Mode: task.Persistent, ACL: task.OpenACL}, nil), task.ErrNoNode)
	mustErr(t, do(t, c, r, &task.CreateRequest{Path: "/acl", Mode: task.Persistent}, nil), task.ErrInvalidACL)
	seq := mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/ops/s-", Mode: task.EphemeralSequential, ACL: task.OpenACL}, nil))
	if seq.Path != "/ops/s-0000000000" {
		t.Fatalf("sequential path = %q", seq.Path)
	}
	mustErr(t, do(t, c, r, &task.CreateRequest{Path: seq.Path + "/c", Mode: task.Persistent, ACL: task.OpenACL}, nil), task.ErrNoChildrenForEphemerals)
	st := mustOK(t, do(t, c, r, &task.ExistsRequest{Path: seq.Path}, nil)).Stat
	if st.EphemeralOwner != c.SessionID() {
		t.Fatalf("ephemeral owner %#x, session %#x", st.EphemeralOwner, c.SessionID())
	}
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/nope"}, nil), task.ErrNoNode)
	get := mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/ops"}, nil))
	if string(get.Data) != "x" || get.Stat.Version != 0 || get.Stat.DataLength != 1 || get.Stat.NumChildren != 1 {
		t.Fatalf("get = %q %+v", get.Data, get.Stat)
	}
	set := mustOK(t, do(t, c, r, &task.SetDataRequest{Path: "/ops", Data: []byte("yy"), Version: 0}, nil))
	if set.Stat.Version != 1 || set.Stat.DataLength != 2 {
		t.Fatalf("set stat = %+v", set.Stat)
	}
	mustErr(t, do(t, c, r, &task.SetDataRequest{Path: "/ops", Version: 0}, nil), task.ErrBadVersion)
	ch := mustOK(t, do(t, c, r, &task.GetChildrenRequest{Path: "/ops"}, nil))
	if len(ch.Children) != 1 || ch.Children[0] != "s-0000000000" {
		t.Fatalf("children = %v", ch.Children)
	}
	mustErr(t, do(t, c, r, &task.DeleteRequest{Path: "/ops", Version: task.AnyVersion}, nil), task.ErrNotEmpty)
	mustErr(t, do(t, c, r, &task.DeleteRequest{Path: seq.Path, Version: 7}, nil), task.ErrBadVersion)
	if p := mustOK(t, do(t, c, r, &task.SyncRequest{Path: "/ops"}, nil)).Path; p != "/ops" {
		t.Fatalf("sync path = %q", p)
	}
	if st := mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/ttl", Mode: task.PersistentWithTTL, TTL: time.Hour, ACL: task.OpenACL}, nil)).Stat; st.Czxid == 0 {
		t.Fatalf("ttl create stat %+v", st)
	}
	// ZooKeeper 3.8 shows clients ephemeralOwner 0 for a container (the
	// Long.MIN_VALUE it stores is hidden).
	if st := mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/container", Mode: task.Container, ACL: task.OpenACL}, nil)).Stat; st.Czxid == 0 || st.EphemeralOwner != 0 {
		t.Fatalf("container create stat %+v", st)
	}
	// Container and TTL creates inside a multi, with their Stats.
	m0 := mustOK(t, do(t, c, r, &task.MultiRequest{Ops: []task.MultiOp{
		&task.CreateRequest{Path: "/container/m", Mode: task.Container, ACL: task.OpenACL},
		&task.CreateRequest{Path: "/ttl2", Mode: task.PersistentSequentialWithTTL, TTL: time.Hour, ACL: task.OpenACL},
	}}, nil))
	if len(m0.Results) != 2 || m0.Results[0].Stat.Czxid == 0 || !strings.HasPrefix(m0.Results[1].Path, "/ttl2000") || m0.Results[1].Stat.Czxid == 0 {
		t.Fatalf("multi of container and ttl = %+v", m0.Results)
	}

	// A multi that succeeds: per-op results.
	m := mustOK(t, do(t, c, r, &task.MultiRequest{Ops: []task.MultiOp{
		&task.CheckRequest{Path: "/ops", Version: 1},
		&task.CreateRequest{Path: "/ops/m", Data: []byte("m"), Mode: task.Persistent, ACL: task.OpenACL},
		&task.SetDataRequest{Path: "/ops/m", Data: []byte("mm"), Version: 0},
		&task.DeleteRequest{Path: seq.Path, Version: 0},
	}}, nil))
	// ZooKeeper 3.8 answers a plain create inside a multi as a create (its
	// name, no Stat), even when sent as create2; container and TTL creates
	// carry their Stat (above).
	if len(m.Results) != 4 || m.Results[1].Path != "/ops/m" || m.Results[1].Stat != (task.Stat{}) || m.Results[2].Stat.Version != 1 {
		t.Fatalf("multi results = %+v", m.Results)
	}
	// A multi that fails at op 1: op 0 rolled back, op 2 never tried.
	m = do(t, c, r, &task.MultiRequest{Ops: []task.MultiOp{
		&task.CreateRequest{Path: "/ops/n", Mode: task.Persistent, ACL: task.OpenACL},
		&task.CheckRequest{Path: "/ops", Version: 0},
		&task.DeleteRequest{Path: "/ops/m", Version: -1},
	}}, nil)
	mustErr(t, m, task.ErrBadVersion)
	if len(m.Results) != 3 || !m.Results[0].RolledBack || m.Results[0].Err != nil ||
		m.Results[1].Err != task.ErrBadVersion || m.Results[2].Err != task.ErrRuntimeInconsistency {
		t.Fatalf("failed multi results = %+v", m.Results)
	}
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/ops/n"}, nil), task.ErrNoNode)
}

// One watch per event type, each delivered exactly once, after the
// response that set it.
func TestWatchEventTypes(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	other, or := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	create := func(p string) {
		mustOK(t, do(t, other, or, &task.CreateRequest{Path: p, Mode: task.Persistent, ACL: task.OpenACL}, nil))
	}

	created := r.watcher()
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/w", Watch: true}, created), task.ErrNoNode)
	noWatch := r.watcher()
	mustErr(t, do(t, c, r, &task.GetDataRequest{Path: "/w", Watch: true}, noWatch), task.ErrNoNode)
	create("/w")
	if ev := created.wait(t, 10*time.Second); ev.Type != task.EventNodeCreated || ev.Path != "/w" {
		t.Fatalf("exists watch = %v", ev)
	}

	changed := r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/w", Watch: true}, changed))
	children := r.watcher()
	mustOK(t, do(t, c, r, &task.GetChildrenRequest{Path: "/w", Watch: true}, children))
	mustOK(t, do(t, other, or, &task.SetDataRequest{Path: "/w", Data: []byte("1"), Version: -1}, nil))
	if ev := changed.wait(t, 10*time.Second); ev.Type != task.EventNodeDataChanged || ev.Path != "/w" {
		t.Fatalf("data watch = %v", ev)
	}
	create("/w/c")
	if ev := children.wait(t, 10*time.Second); ev.Type != task.EventNodeChildrenChanged || ev.Path != "/w" {
		t.Fatalf("child watch = %v", ev)
	}

	deleted := r.watcher()
	mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/w/c", Watch: true}, deleted))
	childDeleted := r.watcher()
	mustOK(t, do(t, c, r, &task.GetChildrenRequest{Path: "/w/c", Watch: true}, childDeleted))
	mustOK(t, do(t, other, or, &task.DeleteRequest{Path: "/w/c", Version: -1}, nil))
	if ev := deleted.wait(t, 10*time.Second); ev.Type != task.EventNodeDeleted {
		t.Fatalf("exists watch on delete = %v", ev)
	}
	if ev := childDeleted.wait(t, 10*time.Second); ev.Type != task.EventNodeDeleted {
		t.Fatalf("child watch on delete = %v", ev)
	}

	// Close ends the remaining watches with NotWatching(Closed), then Closed.
	pending := r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/w", Watch: true}, pending))
	c.Close()
	if ev := pending.wait(t, time.Second); ev.Type != task.EventNotWatching || ev.State != task.StateClosed {
		t.Fatalf("watch at close = %v", ev)
	}
	for _, w := range []*watcher{created, changed, children, deleted, childDeleted, pending, noWatch} {
		w.none(t)
	}
	evs := r.sessionEvents()
	if last := evs[len(evs)-1]; last.State != task.StateClosed {
		t.Fatalf("last event %v", last)
	}
}

// Requests longer on the wire than the server's jute.maxbuffer would make
// it close the connection (connection loss, again on every retry): they
// fail with ErrDataTooLarge, unsent. The exact boundary is the server's.
func TestPacketLimit(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	create := func(n int) *task.CreateRequest {
		return &task.CreateRequest{Path: "/big", Data: make([]byte, n), Mode: task.Persistent, ACL: task.OpenACL}
	}
	fits := task.MaxPacketSize - packetSize(create(0))
	if n := packetSize(create(fits)); n != task.MaxPacketSize {
		t.Fatalf("packet of %d bytes of data is %d", fits, n)
	}
	mustErr(t, do(t, c, r, create(fits+1), nil), task.ErrDataTooLarge)
	// task.MaxDataSize's doc: data of exactly MaxDataSize is refused, and
	// the error names the request's size and the packet limit.
	resp := do(t, c, r, create(task.MaxDataSize), nil)
	mustErr(t, resp, task.ErrDataTooLarge)
	if want := fmt.Sprintf("the request is %d bytes on the wire, over the packet limit of %d", packetSize(create(task.MaxDataSize)), task.MaxPacketSize); !strings.Contains(resp.Err.Error(), want) {
		t.Fatalf("error = %v, want it to say %q", resp.Err, want)
	}
	mustOK(t, do(t, c, r, create(fits), nil))
	set := &task.SetDataRequest{Path: "/big", Version: -1}
	set.Data = make([]byte, task.MaxPacketSize-packetSize(set))
	mustOK(t, do(t, c, r, set, nil))
	set.Data = append(set.Data, 0)
	mustErr(t, do(t, c, r, set, nil), task.ErrDataTooLarge)
	for _, ev := range r.sessionEvents() {
		if ev.State != task.StateConnected {
			t.Fatalf("session event %v: the server dropped the connection", ev)
		}
	}
}

// A Conn that follows a session other than its own refuses requests,
// unsent: they belong to a session that has ended (task.SessionFollower).
func TestFollowRefusesOtherSession(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	r.waitState(t, 0, task.StateConnected, 10*time.Second)
	c.Follow(c.SessionID() + 1) // as if the executor still took an earlier session as current
	mustErr(t, do(t, c, r, &task.CreateRequest{Path: "/follow", Mode: task.Ephemeral, ACL: task.OpenACL}, nil), task.ErrSessionExpired)
	c.Follow(c.SessionID())
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/follow"}, nil), task.ErrNoNode) // the refused create was not sent
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/follow", Mode: task.Ephemeral, ACL: task.OpenACL}, nil))
}

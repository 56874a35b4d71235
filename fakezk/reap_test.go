package fakezk_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// reapServer is an automatic server with TTL nodes whose container
// manager runs every second from the Epoch, and a client on it: do sends
// a request and returns its response (delivered before Do returns).
func reapServer(t *testing.T, cfg fakezk.Config) (*fakezk.Server, *fakezk.Clock, func(task.Request) task.Response) {
	t.Helper()
	clk := fakezk.NewClock(time.Time{})
	cfg.Clock, cfg.ExtendedTypes = clk, true
	if cfg.ContainerCheckInterval == 0 {
		cfg.ContainerCheckInterval = time.Second
	}
	srv := fakezk.New(cfg)
	c := srv.Connect(fakezk.ConnConfig{})
	if err := c.Start(func(task.Event) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if err := srv.CheckInvariants(); err != nil {
			t.Error(err)
		}
	})
	do := func(req task.Request) task.Response {
		var last task.Response
		c.Do(req, func(r task.Response) { last = r }, nil)
		return last
	}
	return srv, clk, do
}

func exists(srv *fakezk.Server, p string) bool { _, ok := srv.NodeStat(p); return ok }

func mustDo(t *testing.T, do func(task.Request) task.Response, req task.Request) task.Response {
	t.Helper()
	r := do(req)
	if r.Err != nil {
		t.Fatalf("%s %s: %v", req.OpName(), req.NodePath(), r.Err)
	}
	return r
}

func ttlNode(p string, ttl time.Duration) *task.CreateRequest {
	return &task.CreateRequest{Path: p, ACL: task.OpenACL, Mode: task.PersistentWithTTL, TTL: ttl}
}

func container(p string) *task.CreateRequest {
	return &task.CreateRequest{Path: p, ACL: task.OpenACL, Mode: task.Container}
}

// TestTTLNodes follows TTL nodes through the container manager's runs, at
// whole seconds from the Epoch.
func TestTTLNodes(t *testing.T) {
	srv, clk, do := reapServer(t, fakezk.Config{})
	if r := mustDo(t, do, ttlNode("/t", 10*time.Second)); r.Stat.EphemeralOwner != 0 {
		t.Fatalf("create ttl: %+v", r)
	}
	clk.Advance(8 * time.Second)
	mustDo(t, do, &task.SetDataRequest{Path: "/t", Version: -1}) // mtime moves: the TTL counts from here
	clk.Advance(8 * time.Second)                                 // t=16s
	if !exists(srv, "/t") {
		t.Fatal("expired 8s after a write with a 10s TTL")
	}
	mustDo(t, do, mk("/t/child"))
	clk.Advance(time.Minute) // t=76s
	if !exists(srv, "/t") {
		t.Fatal("a TTL node with children expired")
	}
	mustDo(t, do, &task.DeleteRequest{Path: "/t/child", Version: -1})
	if !exists(srv, "/t") {
		t.Fatal("an expired TTL node went with its last child, before a run")
	}
	clk.Advance(time.Second) // t=77s: a run
	if exists(srv, "/t") {
		t.Fatal("an expired TTL node without children outlived a run")
	}
	// Sequential, created at 77s with a 1s TTL: the run at 78s finds
	// exactly its TTL passed (not more), the one at 79s deletes it.
	name := mustDo(t, do, &task.CreateRequest{Path: "/s-", ACL: task.OpenACL, Mode: task.PersistentSequentialWithTTL, TTL: time.Second}).Path
	clk.Advance(time.Second)
	if !exists(srv, name) {
		t.Fatal("expired at exactly its TTL (ZooKeeper needs more than the TTL)")
	}
	clk.Advance(time.Second - time.Nanosecond)
	if !exists(srv, name) {
		t.Fatal("deleted between runs")
	}
	clk.Advance(time.Nanosecond)
	if exists(srv, name) {
		t.Fatal("sequential TTL node outlived the run after its TTL")
	}
}

// TestReaperIdleWhenNothingDue: a container or TTL node that time alone
// will never make deletable leaves no timer pending, so simulations that
// run the clock until nothing is pending still end; one that is due keeps
// exactly one timer, for the run that deletes it.
func TestReaperIdleWhenNothingDue(t *testing.T) {
	srv, clk, do := reapServer(t, fakezk.Config{})
	mustDo(t, do, container("/never-used"))
	mustDo(t, do, container("/k"))
	mustDo(t, do, mk("/k/a"))
	mustDo(t, do, ttlNode("/t", time.Millisecond))
	mustDo(t, do, mk("/t/a"))
	if n := clk.Pending(); n != 0 {
		t.Fatalf("%d timers pending with nothing due", n)
	}
	mustDo(t, do, &task.DeleteRequest{Path: "/k/a", Version: -1})
	mustDo(t, do, &task.DeleteRequest{Path: "/t/a", Version: -1})
	if n := clk.Pending(); n != 1 {
		t.Fatalf("%d timers pending with two nodes due, want the one run", n)
	}
	for clk.AdvanceToNext() {
	}
	if exists(srv, "/k") || exists(srv, "/t") || !exists(srv, "/never-used") {
		t.Fatalf("after the runs: %v", srv.Paths())
	}
	if want := fakezk.Epoch.Add(time.Second + 6*time.Millisecond); !clk.Now().Equal(want) {
		t.Fatalf("clock at %s, want %s: one run at 1s, two deletions 6ms apart", clk.Now(), want)
	}
}

// TestReaperDeletesWithoutRecheck: a run decides its candidates when it
// starts; each deletion checks only that the node is there, childless and
// not a session's ephemeral. A TTL node written during the pause before
// its turn is deleted all the same; a container given a child meanwhile
// is not, and the failed request takes a zxid.
func TestReaperDeletesWithoutRecheck(t *testing.T) {
	for seed := range uint64(8) {
		srv, clk, do := reapServer(t, fakezk.Config{Seed: seed, ContainerMaxPerMinute: 60}) // 1s pause
		mustDo(t, do, ttlNode("/t", time.Millisecond))
		mustDo(t, do, container("/k"))
		mustDo(t, do, mk("/k/a"))
		mustDo(t, do, &task.DeleteRequest{Path: "/k/a", Version: -1})
		clk.Advance(time.Second) // the run: one of the two now, the other 1s later
		second := "/k"
		if exists(srv, "/k") == exists(srv, "/t") {
			t.Fatalf("seed %d: after the first deletion: %v", seed, srv.Paths())
		}
		if exists(srv, "/t") {
			second = "/t"
			mustDo(t, do, &task.SetDataRequest{Path: "/t", Version: -1})
		} else {
			mustDo(t, do, mk("/k/b"))
		}
		z := srv.Zxid()
		clk.Advance(time.Second)
		if got := srv.Zxid(); got != z+1 {
			t.Fatalf("seed %d: zxid %d after the second deletion, want %d", seed, got, z+1)
		}
		if second == "/t" && exists(srv, "/t") {
			t.Fatalf("seed %d: a TTL node written during the pause was spared", seed)
		}
		if second == "/k" && !exists(srv, "/k") {
			t.Fatalf("seed %d: a container with a child was deleted", seed)
		}
	}
}

// TestReaperRestart: the container manager stops with the server and
// starts again with it, its runs then falling a check interval apart from
// the restart.
func TestReaperRestart(t *testing.T) {
	srv, clk, do := reapServer(t, fakezk.Config{})
	mustDo(t, do, container("/k"))
	mustDo(t, do, mk("/k/a"))
	clk.Advance(500 * time.Millisecond)
	mustDo(t, do, &task.DeleteRequest{Path: "/k/a", Version: -1})
	srv.Restart(5 * time.Second) // down from 0.5s to 5.5s
	clk.Advance(5 * time.Second)
	if !exists(srv, "/k") {
		t.Fatal("a container deleted while the server was down")
	}
	clk.Advance(time.Second - time.Nanosecond)
	if !exists(srv, "/k") {
		t.Fatal("deleted before the first run after the restart")
	}
	clk.Advance(time.Nanosecond) // 6.5s
	if exists(srv, "/k") {
		t.Fatal("not deleted a check interval after the restart")
	}
}

// TestReaperWipe: a wiped server's container manager starts afresh with
// the empty tree.
func TestReaperWipe(t *testing.T) {
	srv, clk, do := reapServer(t, fakezk.Config{})
	mustDo(t, do, ttlNode("/t", time.Second))
	srv.Wipe()
	// The client is refused by the wiped server and tries again each
	// second (its one timer); the container manager has nothing to do: a
	// run left over from before the wipe would take a zxid.
	if n := clk.Pending(); n != 1 {
		t.Fatalf("%d timers pending after a wipe, want the refused client's retry only", n)
	}
	clk.Advance(3 * time.Second)
	if z := srv.Zxid(); z != 0 {
		t.Fatalf("zxid %d after the wipe with nothing done, want 0", z)
	}
}

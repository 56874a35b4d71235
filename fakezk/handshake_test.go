package fakezk_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// The connect handshake after a total data loss, and the client's rule
// when it is refused (handshake.go): refused while it presents a zxid the
// empty server has not reached, until more than its session timeout has
// passed since it last heard from a server; then a fresh session,
// reported as after any expiry.

// traced counts the trace lines that contain sub.
func traced(srv *fakezk.Server, sub string) int {
	n := 0
	for _, l := range srv.Trace() {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// untilConnected advances the clock timer by timer, checking at each
// instant that c is still refused with its old session and has been told
// nothing, until c is connected again; it returns when.
func untilConnected(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, c *fakezk.Conn, r *recorder, old int64, quiet func(time.Duration) bool, since time.Time) time.Duration {
	t.Helper()
	seen := len(r.get())
	for !c.Connected() {
		if !clk.AdvanceToNext() || clk.Now().Sub(since) > time.Minute {
			t.Fatalf("the client is not connected %s later", clk.Now().Sub(since))
		}
		srv.RunUntilIdle()
		at := clk.Now().Sub(since)
		if quiet(at) && !c.Connected() {
			if c.SessionID() != old {
				t.Fatalf("at %s the client dropped session %#x for %#x", at, old, c.SessionID())
			}
			if got := r.get(); len(got) != seen {
				t.Fatalf("at %s the client was told %v", at, got[seen:])
			}
		}
	}
	return clk.Now().Sub(since)
}

// A client that saw zxids the wiped ensemble has not reached is refused,
// presenting its session, until more than its session timeout has passed
// since it last heard from a server; then it gives the session up (its
// watch ends, StateExpired) and gets a fresh session at once. The zxid
// starts over: 0 after the wipe, raised only by what happens after it.
func TestWipeRefusesUntilTimeoutThenFreshSession(t *testing.T) {
	srv, clk := detServer(5)
	c, r := start(t, srv, 4*time.Second)
	old := c.SessionID()
	c.Do(mk("/a"), r.done("create"), nil)
	c.Do(&task.ExistsRequest{Path: "/a", Watch: true}, r.done("exists"), r.watch("watch"))
	srv.RunUntilIdle()
	if z := srv.Zxid(); z != 2 {
		t.Fatalf("zxid before the wipe %d, want 2 (session, create)", z)
	}
	wiped := clk.Now()
	srv.Wipe()
	srv.RunUntilIdle()
	if _, ok := srv.NodeStat("/a"); ok {
		t.Fatal("/a survived the wipe")
	}
	if z := srv.Zxid(); z != 0 {
		t.Fatalf("zxid after the wipe %d, want 0", z)
	}
	if c.Connected() || c.SessionID() != old {
		t.Fatalf("right after the wipe: connected=%v session=%#x, want refused with %#x", c.Connected(), c.SessionID(), old)
	}
	check(t, r.get()[1:], "create ok", "exists ok", "event session Suspended")

	at := untilConnected(t, srv, clk, c, r, old, func(d time.Duration) bool { return d <= 4*time.Second }, wiped)
	if at <= 4*time.Second || at > 5*time.Second {
		t.Fatalf("fresh session %s after the wipe, want within a retry (1s) after the 4s timeout", at)
	}
	if c.SessionID() == old || c.SessionID() == 0 {
		t.Fatalf("session after giving up %#x (old %#x)", c.SessionID(), old)
	}
	check(t, r.get()[1:], "create ok", "exists ok", "event session Suspended",
		"watch NotWatching Expired", "event session Expired", "event session "+connectedText(c))
	if n := traced(srv, "connect refused"); n != 5 { // at 0, 1, 2, 3 and 4s
		t.Errorf("%d refusals traced, want 5", n)
	}
	if n := traced(srv, "waives lastZxid"); n != 1 {
		t.Errorf("%d decisions to give up traced, want 1", n)
	}

	// Only what happens after the wipe takes zxids: the new session (1),
	// then this create (2).
	if z := srv.Zxid(); z != 1 {
		t.Fatalf("zxid after the wipe and one new session: %d, want 1", z)
	}
	c.Do(mk("/b"), r.done("create b"), nil)
	srv.RunUntilIdle()
	if st, ok := srv.NodeStat("/b"); !ok || st.Czxid != 2 || srv.Zxid() != 2 {
		t.Fatalf("/b after the wipe: %+v %v, server zxid %d; want czxid 2", st, ok, srv.Zxid())
	}
	if len(srv.Sessions()) != 1 {
		t.Fatalf("sessions %v, want the fresh one only", srv.Sessions())
	}
}

// The timeout counts from the client's last contact, not from its first
// refusal: a client cut off for most of its timeout, during which every
// server lost its data, is refused only for the rest of it.
func TestWipeRefusalCountsFromLastContact(t *testing.T) {
	srv, clk := detServer(6)
	c, r := start(t, srv, 4*time.Second)
	old := c.SessionID()
	cut := clk.Now()
	srv.Partition(c, 3*time.Second, false)
	clk.Advance(time.Second)
	srv.Wipe()
	clk.Advance(2 * time.Second) // the partition heals: refused
	srv.RunUntilIdle()
	if c.Connected() || traced(srv, "connect refused") != 1 {
		t.Fatalf("after the partition: connected=%v, %d refusals", c.Connected(), traced(srv, "connect refused"))
	}
	at := untilConnected(t, srv, clk, c, r, old, func(d time.Duration) bool { return d <= 4*time.Second }, cut)
	if at != 5*time.Second {
		t.Fatalf("fresh session %s after the last contact, want 5s (refused at 3s and 4s)", at)
	}
	check(t, r.get()[1:], "event session Suspended", "event session Expired", "event session "+connectedText(c))
}

// A new client, which has seen no zxid at all, connects to a wiped server
// at once, while a client of before the wipe is refused. Once the new
// ensemble's writes pass the zxid the old client saw, its next attempt
// gets in, before its timeout is up, and it learns that its session
// expired, as from any server that does not know the session.
func TestWipeLetsInClientsThatSawNoLaterZxid(t *testing.T) {
	srv, clk := detServer(7)
	old, ro := start(t, srv, 10*time.Second)
	oldID := old.SessionID()
	old.Do(&task.ExistsRequest{Path: "/x"}, ro.done("exists"), nil) // saw zxid 1
	srv.RunUntilIdle()
	srv.Wipe()
	srv.RunUntilIdle()
	if old.Connected() {
		t.Fatal("the old client got in at once")
	}

	n, rn := start(t, srv, 4*time.Second)
	if !n.Connected() {
		t.Fatalf("a new client was not let in: %v", rn.get())
	}
	check(t, rn.get(), "event session "+connectedText(n))
	if z := srv.Zxid(); z != 1 {
		t.Fatalf("zxid %d after the new client's session, want 1", z)
	}
	if old.Connected() {
		t.Fatal("the old client got in though the server's zxid is not above the one it saw")
	}
	n.Do(mk("/y"), rn.done("create"), nil) // zxid 2, above what the old client saw
	srv.RunUntilIdle()
	clk.Advance(time.Second) // its next attempt
	srv.RunUntilIdle()
	if !old.Connected() || old.SessionID() == oldID {
		t.Fatalf("the old client after the new writes: connected=%v session=%#x (old %#x)", old.Connected(), old.SessionID(), oldID)
	}
	check(t, ro.get()[1:], "exists "+task.ErrNoNode.Error(), "event session Suspended", "event session Expired",
		fmt.Sprintf("event session Connected id=%#x timeout=10s", old.SessionID()))
	if n := traced(srv, "waives lastZxid"); n != 0 {
		t.Fatalf("the old client gave up %d times; it was let in before its timeout", n)
	}
}

// Refused for no longer than its timeout, a client keeps its session: when
// servers that kept their data serve again, it resumes it, ephemerals and
// watches intact. A Restart, however long, refuses nothing (nothing listens
// while it is down) and the session is resumed too.
func TestRefusedWithinTimeoutResumes(t *testing.T) {
	srv, clk := detServer(8)
	c, r := start(t, srv, 4*time.Second)
	id := c.SessionID()
	c.Do(&task.CreateRequest{Path: "/e", ACL: task.OpenACL, Mode: task.Ephemeral}, r.done("create"), nil)
	c.Do(&task.GetDataRequest{Path: "/e", Watch: true}, r.done("get"), r.watch("watch"))
	srv.RunUntilIdle()
	lost := clk.Now()
	srv.LoseQuorum(4 * time.Second)
	srv.RunUntilIdle()
	at := untilConnected(t, srv, clk, c, r, id, func(time.Duration) bool { return true }, lost)
	if at != 4*time.Second || c.SessionID() != id {
		t.Fatalf("back %s after the quorum was lost, session %#x; want 4s, %#x", at, c.SessionID(), id)
	}
	if n := traced(srv, "connect refused"); n != 4 { // at 0, 1, 2 and 3s
		t.Errorf("%d refusals traced, want 4", n)
	}

	srv.Restart(5 * 4 * time.Second)
	clk.Advance(5 * 4 * time.Second)
	srv.RunUntilIdle()
	if !c.Connected() || c.SessionID() != id {
		t.Fatalf("after a restart longer than the timeout: connected=%v session=%#x, want %#x", c.Connected(), c.SessionID(), id)
	}
	if n := traced(srv, "connect refused"); n != 4 {
		t.Errorf("the restart refused %d attempts", n-4)
	}
	if _, ok := srv.NodeStat("/e"); !ok {
		t.Fatal("the ephemeral is gone")
	}
	c.Do(&task.SetDataRequest{Path: "/e", Version: -1}, r.done("set"), nil)
	srv.RunUntilIdle()
	check(t, r.get()[1:], "create ok", "get ok", "event session Suspended", "event session "+connectedText(c),
		"event session Suspended", "event session "+connectedText(c), "watch NodeDataChanged Connected", "set ok")
}

// Servers that stop serving for longer than the session timeout and come
// back with their data: the client waives its lastZxid once the timeout
// has passed, but keeps presenting its session, which the server resumes
// when it serves again. Nothing is reported expired, the ephemeral and the
// watch are kept: the client never abandons a session the servers keep.
func TestNotServingPastTimeoutKeepsSession(t *testing.T) {
	srv, clk := detServer(9)
	c, r := start(t, srv, 4*time.Second)
	old := c.SessionID()
	c.Do(&task.CreateRequest{Path: "/e", ACL: task.OpenACL, Mode: task.Ephemeral}, r.done("create"), nil)
	c.Do(&task.GetDataRequest{Path: "/e", Watch: true}, r.done("get"), r.watch("watch"))
	srv.RunUntilIdle()
	lost := clk.Now()
	srv.LoseQuorum(10 * time.Second)
	clk.Advance(5 * time.Second) // refused at 0..4s, waives its zxid at 5s
	srv.RunUntilIdle()
	check(t, r.get()[1:], "create ok", "get ok", "event session Suspended")
	if c.Connected() || c.SessionID() != old {
		t.Fatalf("while refused: connected=%v session=%#x, want %#x kept", c.Connected(), c.SessionID(), old)
	}
	if n := traced(srv, "waives lastZxid"); n != 1 {
		t.Fatalf("%d decisions traced, want 1", n)
	}
	c.Do(mk("/x"), r.done("while refused"), nil)
	srv.RunUntilIdle()
	clk.Set(lost.Add(10 * time.Second)) // serving again
	srv.RunUntilIdle()
	if !c.Connected() || c.SessionID() != old {
		t.Fatalf("after the quorum is back: connected=%v session=%#x, want %#x resumed", c.Connected(), c.SessionID(), old)
	}
	check(t, r.get()[4:], "while refused "+task.ErrNotSent.Error(), "event session "+connectedText(c))
	if _, ok := srv.NodeStat("/e"); !ok {
		t.Fatal("the session's ephemeral went")
	}
	c.Do(&task.SetDataRequest{Path: "/e", Data: []byte("v"), Version: -1}, r.done("set"), nil)
	srv.RunUntilIdle()
	check(t, r.get()[6:], "watch NodeDataChanged Connected", "set ok")
	if err := srv.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestDeterminismAcrossWipe(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		h1, srv := wipeWorkload(t, seed)
		h2, _ := wipeWorkload(t, seed)
		if h1 != h2 {
			t.Errorf("seed %d: traces differ", seed)
			srv.WriteTrace(tWriter{t})
		}
		if seed == 1 && traced(srv, "connect refused") == 0 {
			t.Error("seed 1 refused no handshake")
		}
	}
}

func wipeWorkload(t *testing.T, seed uint64) (string, *fakezk.Server) {
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Seed: seed, Clock: clk, Deterministic: true, Trace: true, FaultRate: 0.02})
	rng := rand.New(rand.NewPCG(seed, 7))
	var conns []*fakezk.Conn
	var log []string
	for i := range 3 {
		c := srv.Connect(fakezk.ConnConfig{Timeout: time.Duration(4+2*i) * time.Second})
		if err := c.Start(func(ev task.Event) { log = append(log, fmt.Sprintf("c%d %v", i, ev)) }); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	done := func(r task.Response) { log = append(log, fmt.Sprintf("resp %v", r.Err)) }
	for round := range 600 {
		c := conns[rng.IntN(len(conns))]
		switch {
		case round == 150 || round == 400:
			srv.Wipe()
		case round == 300:
			srv.LoseQuorum(time.Duration(rng.IntN(12000)) * time.Millisecond)
		}
		switch rng.IntN(4) {
		case 0:
			c.Do(mk(fmt.Sprintf("/n%d", rng.IntN(5))), done, nil)
		case 1:
			c.Do(&task.ExistsRequest{Path: "/n0", Watch: true}, done, func(ev task.Event) { log = append(log, "watch "+ev.String()) })
		case 2:
			srv.RunUntilIdle()
		case 3:
			clk.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
		}
		if err := srv.CheckInvariants(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	for end := clk.Now().Add(time.Minute); clk.Now().Before(end) && (srv.RunUntilIdle() > 0 || clk.AdvanceToNext()); {
	}
	for _, c := range conns {
		if !c.Connected() {
			t.Fatalf("seed %d: a client is not connected a minute after the last fault", seed)
		}
		c.Close()
	}
	srv.RunUntilIdle()
	return srv.TraceHash() + fmt.Sprint(len(log)), srv
}

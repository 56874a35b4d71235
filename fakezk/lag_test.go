package fakezk_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// lagWorld is an automatic-mode server on a simulated clock with two
// clients: a, whose member will lag, and b, who writes.
func lagWorld(t *testing.T) (*fakezk.Server, *fakezk.Clock, *fakezk.Conn, *fakezk.Conn) {
	t.Helper()
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk})
	t.Cleanup(func() { srv.Close() })
	a := connect(t, srv, fakezk.ConnConfig{Timeout: 4 * time.Second})
	b := connect(t, srv, fakezk.ConnConfig{Timeout: 4 * time.Second})
	return srv, clk, a, b
}

// watchedReadsFromTheView returns a, lagging for a minute with watched
// reads answered from its view (LagWatchedReads), and b, whose write of
// /x ("v1" to "v2") a's member has not applied.
func watchedReadsFromTheView(t *testing.T) (a, b *fakezk.Conn) {
	t.Helper()
	srv, _, a, b := lagWorld(t)
	srv.LagWatchedReads(true)
	mustOK(t, do(b, &task.CreateRequest{Path: "/x", Data: []byte("v1"), ACL: task.OpenACL}))
	srv.Lag(a, time.Minute)
	mustOK(t, do(b, &task.SetDataRequest{Path: "/x", Data: []byte("v2"), Version: -1}))
	return a, b
}

func mustOK(t *testing.T, r task.Response) task.Response {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("unexpected error %v", r.Err)
	}
	return r
}

// A lagging member answers a read without a watch from what it has
// applied: another session's acknowledged write is missing, data, Stat
// and children, until something catches the member up.
func TestLagServesStaleReads(t *testing.T) {
	srv, _, a, b := lagWorld(t)
	mustOK(t, do(b, &task.CreateRequest{Path: "/x", Data: []byte("v1"), ACL: task.OpenACL}))
	before := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"}))
	srv.Lag(a, time.Minute)
	mustOK(t, do(b, &task.SetDataRequest{Path: "/x", Data: []byte("v2"), Version: -1}))
	mustOK(t, do(b, &task.CreateRequest{Path: "/x/c", ACL: task.OpenACL}))
	mustOK(t, do(b, &task.CreateRequest{Path: "/y", ACL: task.OpenACL}))

	got := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"}))
	if string(got.Data) != "v1" || got.Stat != before.Stat {
		t.Fatalf("lagging getData = %q %+v, want v1 %+v", got.Data, got.Stat, before.Stat)
	}
	if kids := mustOK(t, do(a, &task.GetChildrenRequest{Path: "/x"})); len(kids.Children) != 0 || kids.Stat.NumChildren != 0 {
		t.Fatalf("lagging getChildren = %v %+v, want none", kids.Children, kids.Stat)
	}
	if r := do(a, &task.ExistsRequest{Path: "/y"}); r.Err != task.ErrNoNode {
		t.Fatalf("lagging exists /y = %v, want NoNode", r.Err)
	}
	if lag, _ := a.Lagging(); !lag {
		t.Fatal("a no longer lags")
	}
	// b's member does not lag.
	if r := mustOK(t, do(b, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "v2" {
		t.Fatalf("b reads %q", r.Data)
	}
}

// Each way a lagging member catches up: the session's own write (it
// reads it, and what came before it), a sync, a watched read, a
// notification (its data is never older than a notification it has
// had), the end of the lag's duration, and a session event.
func TestLagCatchesUp(t *testing.T) {
	write := func(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a, b *fakezk.Conn) {
		mustOK(t, do(a, &task.CreateRequest{Path: "/own", ACL: task.OpenACL}))
	}
	cases := map[string]func(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a, b *fakezk.Conn){
		"own write": write,
		"failed own write": func(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a, b *fakezk.Conn) {
			if r := do(a, &task.DeleteRequest{Path: "/missing", Version: -1}); r.Err != task.ErrNoNode {
				t.Fatalf("delete = %v", r.Err)
			}
		},
		"sync": func(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a, b *fakezk.Conn) {
			mustOK(t, do(a, &task.SyncRequest{Path: "/"}))
		},
		"watched read": func(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a, b *fakezk.Conn) {
			var got task.Response
			a.Do(&task.GetDataRequest{Path: "/x", Watch: true}, func(r task.Response) { got = r }, func(task.Event) {})
			if string(got.Data) != "v2" {
				t.Fatalf("watched read %q, want v2", got.Data)
			}
		},
		"watched read of another node": func(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a, b *fakezk.Conn) {
			// Without LagWatchedReads a watched read catches the whole
			// view up, whatever changed.
			mustOK(t, do(b, &task.CreateRequest{Path: "/other", ACL: task.OpenACL}))
			a.Do(&task.ExistsRequest{Path: "/nothing", Watch: true}, func(task.Response) {}, func(task.Event) {})
		},
		"duration": func(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a, b *fakezk.Conn) {
			clk.Advance(time.Second)
			if lag, _ := a.Lagging(); lag {
				t.Fatal("still lagging after its duration")
			}
		},
		"drop": func(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a, b *fakezk.Conn) {
			srv.Drop(a, false)
			if lag, _ := a.Lagging(); lag {
				t.Fatal("still lagging after a connection loss")
			}
		},
	}
	for name, catchUp := range cases {
		t.Run(name, func(t *testing.T) {
			srv, clk, a, b := lagWorld(t)
			mustOK(t, do(b, &task.CreateRequest{Path: "/x", Data: []byte("v1"), ACL: task.OpenACL}))
			srv.Lag(a, time.Second)
			mustOK(t, do(b, &task.SetDataRequest{Path: "/x", Data: []byte("v2"), Version: -1}))
			if r := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "v1" {
				t.Fatalf("not stale before catching up: %q", r.Data)
			}
			catchUp(t, srv, clk, a, b)
			if r := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "v2" {
				t.Fatalf("after catching up a reads %q, want v2", r.Data)
			}
		})
	}
	t.Run("watched read from the view, a change to fire", func(t *testing.T) {
		// With LagWatchedReads, served from the view too: its watch is
		// set, and fires as the member applies the change after the
		// view (here at a sync, before the sync's reply), not with the
		// answer; the view does not move until then.
		a, _ := watchedReadsFromTheView(t)
		var got task.Response
		var order []string
		a.Do(&task.GetDataRequest{Path: "/x", Watch: true}, func(r task.Response) { got = r }, func(ev task.Event) { order = append(order, ev.Type.String()) })
		if string(got.Data) != "v1" || len(order) != 0 {
			t.Fatalf("watched read %q, notifications %v: want v1, none yet", got.Data, order)
		}
		if r := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "v1" {
			t.Fatalf("the view moved: %q", r.Data)
		}
		a.Do(&task.SyncRequest{Path: "/"}, func(r task.Response) { mustOK(t, r); order = append(order, "sync") }, nil)
		if !slices.Equal(order, []string{task.EventNodeDataChanged.String(), "sync"}) {
			t.Fatalf("%v: want the notification, then the sync's reply", order)
		}
		if r := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "v2" {
			t.Fatalf("after the sync a reads %q, want v2", r.Data)
		}
	})
	t.Run("watched read from the view, no change to fire", func(t *testing.T) {
		// A watch the changes after the view do not fire is set on the
		// server; the view stays, and the next change fires it.
		a, b := watchedReadsFromTheView(t)
		var fired []task.Event
		var got task.Response
		a.Do(&task.GetChildrenRequest{Path: "/x", Watch: true}, func(r task.Response) { got = r }, func(ev task.Event) { fired = append(fired, ev) })
		if got.Err != nil || got.Stat.Version != 0 || len(fired) != 0 {
			t.Fatalf("watched getChildren: %v version %d, notifications %v; want the view's Stat, none", got.Err, got.Stat.Version, fired)
		}
		if r := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "v1" {
			t.Fatalf("the view moved: %q", r.Data)
		}
		mustOK(t, do(b, &task.CreateRequest{Path: "/x/c", ACL: task.OpenACL}))
		if len(fired) != 1 || fired[0].Type != task.EventNodeChildrenChanged {
			t.Fatalf("notifications %v, want NodeChildrenChanged", fired)
		}
	})
	t.Run("notification", func(t *testing.T) {
		srv, _, a, b := lagWorld(t)
		mustOK(t, do(b, &task.CreateRequest{Path: "/x", Data: []byte("v1"), ACL: task.OpenACL}))
		mustOK(t, do(b, &task.CreateRequest{Path: "/w", ACL: task.OpenACL}))
		var fired []task.Event
		a.Do(&task.GetDataRequest{Path: "/w", Watch: true}, func(task.Response) {}, func(ev task.Event) { fired = append(fired, ev) })
		srv.Lag(a, time.Minute)
		mustOK(t, do(b, &task.SetDataRequest{Path: "/x", Data: []byte("v2"), Version: -1}))
		if r := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "v1" {
			t.Fatalf("not stale: %q", r.Data)
		}
		mustOK(t, do(b, &task.SetDataRequest{Path: "/w", Data: []byte("go"), Version: -1}))
		if len(fired) != 1 || fired[0].Type != task.EventNodeDataChanged {
			t.Fatalf("notifications %v", fired)
		}
		if r := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "v2" {
			t.Fatalf("after a notification of a later write a reads %q, want v2", r.Data)
		}
	})
}

// The model against the definition, on random histories in deterministic
// mode: four clients write, read (with and without watches) and sync at
// random while their members lag, drift and catch up. Every response's
// zxid (Conn.Send) never goes back for a session, is never below the
// session's own last write, and every read answers exactly what the tree
// was at that zxid; a notification of a node's change is never followed
// by a read of that node from before the change. Stale reads must occur.
func TestLagHistoriesAreSnapshotsOfThePast(t *testing.T) {
	stale, reconnects := 0, 0
	for seed := uint64(1); seed <= 40; seed++ {
		s, r := lagHistory(t, seed)
		stale, reconnects = stale+s, reconnects+r
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
	t.Logf("%d stale reads, %d reconnects through a lagging member", stale, reconnects)
	if stale < 40 || reconnects < 40 {
		t.Fatalf("only %d stale reads and %d reconnects through a lagging member in 40 histories", stale, reconnects)
	}
}

type lagClient struct {
	c        *fakezk.Conn
	last     int64            // zxid of the last response
	ownWrite int64            // zxid of its last write's response
	notified map[string]int64 // path -> Mzxid that the last notification moved past
	busy     bool
	writing  bool // its request in flight is a write
}

func lagHistory(t *testing.T, seed uint64) (stale, reconnectLags int) {
	t.Helper()
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk, Deterministic: true, Seed: seed})
	defer srv.Close()
	if seed%2 == 0 {
		srv.KeepHistory() // lags start as far back as each client has heard
	}
	if seed%4 < 2 {
		srv.LagWatchedReads(true)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	states := map[int64]map[string]fakezk.Node{} // zxid -> tree
	var zxids []int64
	snapshot := func() {
		z, nodes := srv.Snapshot()
		if _, ok := states[z]; ok {
			return
		}
		m := make(map[string]fakezk.Node, len(nodes))
		for _, n := range nodes {
			m[n.Path] = n
		}
		states[z] = m
		zxids = append(zxids, z)
	}
	at := func(z int64) map[string]fakezk.Node {
		i, found := slices.BinarySearch(zxids, z)
		if !found {
			i--
		}
		return states[zxids[i]]
	}
	snapshot()
	paths := []string{"/a", "/b", "/a/x", "/a/y", "/b/z"}
	clients := make([]*lagClient, 4)
	for i := range clients {
		c := srv.Connect(fakezk.ConnConfig{Timeout: 10 * time.Second})
		if err := c.Start(func(task.Event) {}); err != nil {
			t.Fatal(err)
		}
		clients[i] = &lagClient{c: c, notified: map[string]int64{}}
	}
	srv.RunUntilIdle()
	snapshot()
	check := func(cl *lagClient, req task.Request, r task.Response, z int64) {
		if z < cl.last {
			t.Errorf("zxid went back: %d after %d", z, cl.last)
		}
		if z < cl.ownWrite {
			t.Errorf("zxid %d below the session's own write %d", z, cl.ownWrite)
		}
		cl.last = z
		path := req.NodePath()
		n, exists := at(z)[path]
		switch req.(type) {
		case *task.GetDataRequest, *task.ExistsRequest:
			if r.Err == task.ErrNoNode {
				if exists {
					t.Errorf("%s %s at zxid %d: NoNode, but it existed", req.OpName(), path, z)
				}
				return
			}
			if !exists {
				t.Errorf("%s %s at zxid %d: found, but it did not exist", req.OpName(), path, z)
				return
			}
			want := n.Stat
			want.Cversion = want.Cversion*2 - want.NumChildren
			if r.Stat != want {
				t.Errorf("%s %s at zxid %d: Stat %+v, want %+v", req.OpName(), path, z, r.Stat, want)
			}
			if _, ok := req.(*task.GetDataRequest); ok && !bytes.Equal(r.Data, n.Data) {
				t.Errorf("getData %s at zxid %d: %q, want %q", path, z, r.Data, n.Data)
			}
			if m := cl.notified[path]; m != 0 && r.Stat.Mzxid <= m {
				t.Errorf("%s %s: Mzxid %d after a notification of a change past %d", req.OpName(), path, r.Stat.Mzxid, m)
			}
		case *task.GetChildrenRequest:
			if r.Err == task.ErrNoNode {
				if exists {
					t.Errorf("getChildren %s at zxid %d: NoNode, but it existed", path, z)
				}
				return
			}
			var want []string
			for p := range at(z) {
				if p != path && fakezkParent(p) == path {
					want = append(want, p[len(path)+1:])
				}
			}
			got := slices.Clone(r.Children)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("getChildren %s at zxid %d: %v, want %v", path, z, got, want)
			}
		}
	}
	var watches []*pendingWatch
	var issue func(cl *lagClient)
	issue = func(cl *lagClient) {
		path := paths[rng.IntN(len(paths))]
		var req task.Request
		watch := rng.IntN(4) == 0
		switch rng.IntN(9) {
		case 0, 1:
			req = &task.CreateRequest{Path: path, Data: []byte(fmt.Sprint(rng.IntN(100))), ACL: task.OpenACL}
		case 2:
			req = &task.SetDataRequest{Path: path, Data: []byte(fmt.Sprint(rng.IntN(100))), Version: -1}
		case 3:
			req = &task.DeleteRequest{Path: path, Version: -1}
		case 4:
			req = &task.SyncRequest{Path: path}
		case 5:
			req = &task.ExistsRequest{Path: path, Watch: watch}
		case 6:
			path = paths[rng.IntN(2)]
			req = &task.GetChildrenRequest{Path: path, Watch: watch}
		default:
			req = &task.GetDataRequest{Path: path, Watch: watch}
		}
		var onWatch func(task.Event)
		var m0 int64 // the Mzxid the watched read returned
		var pw *pendingWatch
		if watch {
			pw = &pendingWatch{path: path}
			onWatch = func(ev task.Event) {
				pw.fired = true
				if ev.Type == task.EventNodeDataChanged && m0 != 0 {
					cl.notified[ev.Path] = max(cl.notified[ev.Path], m0)
				}
			}
		}
		cl.busy = true
		switch req.(type) {
		case *task.CreateRequest, *task.SetDataRequest, *task.DeleteRequest:
			cl.writing = true
		}
		cl.c.Send(req, func(r task.Response, z int64) {
			cl.busy, cl.writing = false, false
			if r.Err == task.ErrConnectionLoss || r.Err == task.ErrNotSent {
				return
			}
			switch req.(type) {
			case *task.CreateRequest, *task.SetDataRequest, *task.DeleteRequest, *task.SyncRequest:
				if z < cl.last {
					t.Errorf("%s's zxid %d below the last %d", req.OpName(), z, cl.last)
				}
				cl.ownWrite, cl.last = z, z
			default:
				check(cl, req, r, z)
				if watch && r.Err == nil {
					m0 = r.Stat.Mzxid
				}
				if watch {
					pw.set(req, r)
					if pw.kind != "" {
						watches = append(watches, pw)
					}
				}
			}
		}, onWatch)
	}
	for step := 0; step < 3000; step++ {
		for _, cl := range clients {
			if !cl.busy && rng.IntN(3) == 0 {
				issue(cl)
			}
		}
		if rng.IntN(40) == 0 {
			srv.Lag(clients[rng.IntN(len(clients))].c, time.Duration(1+rng.IntN(2000))*time.Millisecond)
		}
		if rng.IntN(200) == 0 {
			srv.Drop(clients[rng.IntN(len(clients))].c, false)
		}
		if seed%2 == 0 && rng.IntN(60) == 0 {
			// A cut that applies a write in flight, the session back
			// through a member that has not applied it (with the
			// watches SetWatches brings held back until it does).
			if cl := clients[rng.IntN(len(clients))]; cl.writing {
				srv.LagAtReconnect(cl.c, time.Duration(1+rng.IntN(2000))*time.Millisecond, rng.IntN(2) == 0)
				srv.Drop(cl.c, true)
				reconnectLags++
			}
		}
		if rng.IntN(20) == 0 {
			clk.Advance(time.Duration(rng.IntN(100)) * time.Millisecond)
		}
		srv.Step()
		snapshot()
		if t.Failed() {
			return stale, reconnectLags
		}
	}
	// Every watch set is fired by the time the history settles if its
	// node has changed since the read that set it.
	srv.EndLags()
	for srv.Step() {
		snapshot()
	}
	_, nodes := srv.Snapshot()
	now := map[string]fakezk.Node{}
	for _, n := range nodes {
		now[n.Path] = n
	}
	for _, pw := range watches {
		if !pw.fired && pw.changed(now) {
			t.Errorf("a %s watch on %s set at Mzxid %d Pzxid %d never fired, and the node changed: %+v", pw.kind, pw.path, pw.mz, pw.pz, now[pw.path].Stat)
		}
	}
	return srv.StaleReads(), reconnectLags
}

// pendingWatch is a watch a read set, with what the read saw.
type pendingWatch struct {
	path   string
	kind   string // "data", "exist" or "child"; "" if the read set none
	mz, pz int64
	fired  bool
}

func (pw *pendingWatch) set(req task.Request, r task.Response) {
	switch req.(type) {
	case *task.ExistsRequest:
		pw.kind = "data"
		if r.Err == task.ErrNoNode {
			pw.kind = "exist"
		}
	case *task.GetDataRequest:
		if r.Err == nil {
			pw.kind = "data"
		}
	case *task.GetChildrenRequest:
		if r.Err == nil {
			pw.kind = "child"
		}
	}
	pw.mz, pw.pz = r.Stat.Mzxid, r.Stat.Pzxid
}

func (pw *pendingWatch) changed(now map[string]fakezk.Node) bool {
	n, ok := now[pw.path]
	switch pw.kind {
	case "data":
		return !ok || n.Stat.Mzxid != pw.mz
	case "exist":
		return ok
	case "child":
		return !ok || n.Stat.Pzxid != pw.pz
	}
	return false
}

func fakezkParent(p string) string {
	i := len(p) - 1
	for i > 0 && p[i] != '/' {
		i--
	}
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// The history kept for lags is trimmed to what a lag can still ask for:
// a long run of writes with one lagging reader and KeepHistory keeps
// the reader's stale reads exact and the history bounded by what lies
// after the lowest view, not by every write ever made.
func TestLagHistoryTrimmed(t *testing.T) {
	srv, _, a, b := lagWorld(t)
	srv.KeepHistory()
	mustOK(t, do(b, &task.CreateRequest{Path: "/x", Data: []byte("0"), ACL: task.OpenACL}))
	for i := 1; i <= 3000; i++ {
		mustOK(t, do(b, &task.SetDataRequest{Path: "/x", Data: []byte(fmt.Sprint(i)), Version: -1}))
	}
	mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})) // a has heard up to here
	srv.Lag(a, time.Hour)
	for i := 3001; i <= 9000; i++ {
		mustOK(t, do(b, &task.SetDataRequest{Path: "/x", Data: []byte(fmt.Sprint(i)), Version: -1}))
		if i%1000 == 0 {
			if r := mustOK(t, do(a, &task.GetDataRequest{Path: "/x"})); string(r.Data) != "3000" {
				t.Fatalf("after %d writes the lagging read is %q, want 3000", i, r.Data)
			}
		}
	}
	// 6,000 entries lie after a's view: kept. The 3,000 before it (and
	// before b's and a's last zxids) are not.
	if n := srv.HistLen(); n < 6000 || n > 6100 {
		t.Fatalf("history holds %d entries, want the 6,000 after the lagging view", n)
	}
}

// Lag of a Conn not started yet lags its first session from its start:
// a new process, which has heard of nothing, connects through a member
// that has not applied what was written before (with KeepHistory, as far
// back as the history goes); the Connected event does not end that lag,
// and it lasts its duration from the start.
func TestLagBeforeStart(t *testing.T) {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk})
	t.Cleanup(func() { srv.Close() })
	srv.KeepHistory()
	b := connect(t, srv, fakezk.ConnConfig{Timeout: 4 * time.Second})
	mustOK(t, do(b, &task.CreateRequest{Path: "/x", Data: []byte("v1"), ACL: task.OpenACL}))

	a := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	t.Cleanup(func() { a.Close() })
	srv.Lag(a, time.Second)
	clk.Advance(2 * time.Second) // the duration counts from the start, not from Lag
	var events []task.Event
	if err := a.Start(func(ev task.Event) { events = append(events, ev) }); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].State != task.StateConnected {
		t.Fatalf("events %v, want Connected", events)
	}
	if lag, _ := a.Lagging(); !lag {
		t.Fatal("the first session does not lag")
	}
	if r := do(a, &task.ExistsRequest{Path: "/x"}); r.Err != task.ErrNoNode {
		t.Fatalf("exists /x on the lagging member = %v, want NoNode (created before it started)", r.Err)
	}
	clk.Advance(time.Second)
	if lag, _ := a.Lagging(); lag {
		t.Fatal("still lagging after its duration")
	}
	mustOK(t, do(a, &task.ExistsRequest{Path: "/x"}))
}

var errNoReply = errors.New("no reply")

// In deterministic mode a lagging view drifts forward at random now and
// then (the scheduler's choice); LagHeld's does not: it stays where it
// was until something catches it up.
func TestLagHeldDoesNotDrift(t *testing.T) {
	for _, held := range []bool{false, true} {
		clk := fakezk.NewClock(fakezk.Epoch)
		srv := fakezk.New(fakezk.Config{Clock: clk, Deterministic: true, Seed: 1})
		a := connect(t, srv, fakezk.ConnConfig{Timeout: 10 * time.Second})
		b := connect(t, srv, fakezk.ConnConfig{Timeout: 10 * time.Second})
		srv.RunUntilIdle()
		if held {
			srv.LagHeld(a, time.Minute)
		} else {
			srv.Lag(a, time.Minute)
		}
		_, view := a.Lagging()
		for i := range 200 {
			var err error
			b.Do(&task.CreateRequest{Path: fmt.Sprintf("/n%d", i), ACL: task.OpenACL}, func(r task.Response) { err = r.Err }, nil)
			srv.RunUntilIdle()
			if err != nil {
				t.Fatal(err)
			}
		}
		lagging, now := a.Lagging()
		switch {
		case !lagging:
			t.Fatalf("held %v: the lag ended", held)
		case held && now != view:
			t.Fatalf("LagHeld: the view moved from %d to %d", view, now)
		case !held && now == view:
			t.Fatalf("Lag: the view stayed at %d over 200 writes: the test shows nothing", view)
		}
		var synced error = errNoReply
		a.Do(&task.SyncRequest{Path: "/"}, func(r task.Response) { synced = r.Err }, nil)
		srv.RunUntilIdle()
		if _, v := a.Lagging(); synced != nil || v <= view {
			t.Fatalf("held %v: sync (%v) left the view at %d", held, synced, v)
		}
		srv.Close()
	}
}

// LagAtReconnect: a session back after a cut comes through a member that
// has applied the last zxid its client saw and not the write whose reply
// the cut lost. A plain read there misses that write; a sync catches the
// member up. With it off, the member the session comes back through has
// applied everything.
func TestLagAtReconnectHidesALostReply(t *testing.T) {
	for _, lag := range []bool{false, true} {
		t.Run(fmt.Sprintf("lag=%v", lag), func(t *testing.T) {
			clk, srv := keptHistoryServer(t)
			a := connect(t, srv, fakezk.ConnConfig{Timeout: 10 * time.Second})
			srv.RunUntilIdle()
			run := func(req task.Request) task.Response {
				got := task.Response{Err: errNoReply}
				a.Do(req, func(r task.Response) { got = r }, nil)
				srv.RunUntilIdle()
				return got
			}
			created := task.Response{Err: errNoReply}
			a.Do(&task.CreateRequest{Path: "/x", ACL: task.OpenACL}, func(r task.Response) { created = r }, nil)
			if lag {
				srv.LagAtReconnect(a, time.Minute, true)
			}
			srv.Partition(a, time.Second, true)
			clk.Advance(time.Second)
			srv.RunUntilIdle()
			if created.Err != task.ErrConnectionLoss {
				t.Fatalf("create cut off: %v, want connection loss", created.Err)
			}
			if _, ok := srv.NodeStat("/x"); !ok {
				t.Fatal("the create in flight was not applied")
			}
			if lagging, _ := a.Lagging(); lagging != lag {
				t.Fatalf("lagging after the reconnect: %v, want %v", lagging, lag)
			}
			want := error(nil)
			if lag {
				want = task.ErrNoNode
			}
			if r := run(&task.ExistsRequest{Path: "/x"}); r.Err != want {
				t.Fatalf("exists /x after the reconnect = %v, want %v", r.Err, want)
			}
			mustOK(t, run(&task.SyncRequest{Path: "/"}))
			mustOK(t, run(&task.ExistsRequest{Path: "/x"}))
		})
	}
}

// A watch set before the cut, on the node the lost write changed: the
// member the session comes back through checks it against its own tree
// and sends the notification as it applies the change, not at the
// reconnect (Conn.deferred). Until then a plain read there misses the
// write; a sync catches the member up, and the notification comes before
// the sync's reply. On the code before, the notification went at the
// reconnect and caught the member up, hiding the lag from every read.
func TestLagAtReconnectHoldsBackSetWatches(t *testing.T) {
	clk, srv := keptHistoryServer(t)
	a := connect(t, srv, fakezk.ConnConfig{Timeout: 10 * time.Second})
	srv.RunUntilIdle()
	var order []string
	run := func(req task.Request) task.Response {
		got := task.Response{Err: errNoReply}
		a.Do(req, func(r task.Response) { got = r; order = append(order, req.OpName()) }, nil)
		srv.RunUntilIdle()
		return got
	}
	mustOK(t, run(&task.CreateRequest{Path: "/x", Data: []byte("old"), ACL: task.OpenACL}))
	var fired []task.Event
	a.Do(&task.GetDataRequest{Path: "/x", Watch: true}, func(r task.Response) { mustOK(t, r) }, func(ev task.Event) {
		fired = append(fired, ev)
		order = append(order, "watch")
	})
	srv.RunUntilIdle()
	lostSetThroughLaggingMember(t, srv, clk, a, "new")
	if lagging, _ := a.Lagging(); !lagging {
		t.Fatal("the session came back through a member that does not lag")
	}
	if len(fired) != 0 {
		t.Fatalf("the watch fired at the reconnect, before the member applied the change: %v", fired)
	}
	if r := run(&task.GetDataRequest{Path: "/x"}); r.Err != nil || string(r.Data) != "old" {
		t.Fatalf("plain read after the reconnect = %q %v, want the member's old data", r.Data, r.Err)
	}
	order = nil
	mustOK(t, run(&task.SyncRequest{Path: "/"}))
	if len(fired) != 1 || fired[0].Type != task.EventNodeDataChanged || !slices.Equal(order, []string{"watch", "sync"}) {
		t.Fatalf("after the sync: fired %v, order %v; want one NodeDataChanged, before the sync's reply", fired, order)
	}
	if r := run(&task.GetDataRequest{Path: "/x"}); r.Err != nil || string(r.Data) != "new" {
		t.Fatalf("read after the sync = %q %v, want new", r.Data, r.Err)
	}
}

// Watches held back (one SetWatches brought, one a watched read from the
// view set) and still registered, fired by a new change of another
// session: the first notification catches the member up and sends what
// was held back, inside the loop that fires the path's watches. Each
// watch fires once, with the change the member applied first; the loop's
// list is not changed under it (it was, and the next watch read was nil).
func TestLagHeldBackWatchesFiredByANewChange(t *testing.T) {
	clk, srv := keptHistoryServer(t)
	srv.LagWatchedReads(true)
	a := connect(t, srv, fakezk.ConnConfig{Timeout: 10 * time.Second})
	b := connect(t, srv, fakezk.ConnConfig{Timeout: 10 * time.Second})
	srv.RunUntilIdle()
	run := func(c *fakezk.Conn, req task.Request, watch func(task.Event)) task.Response {
		got := task.Response{Err: errNoReply}
		c.Do(req, func(r task.Response) { got = r }, watch)
		srv.RunUntilIdle()
		return got
	}
	mustOK(t, run(a, &task.CreateRequest{Path: "/x", Data: []byte("v1"), ACL: task.OpenACL}, nil))
	var fired []task.Event
	onWatch := func(ev task.Event) { fired = append(fired, ev) }
	mustOK(t, run(a, &task.GetDataRequest{Path: "/x", Watch: true}, onWatch))
	lostSetThroughLaggingMember(t, srv, clk, a, "v2")
	if r := run(a, &task.GetDataRequest{Path: "/x", Watch: true}, onWatch); r.Err != nil || string(r.Data) != "v1" {
		t.Fatalf("watched read from the view = %q %v, want v1", r.Data, r.Err)
	}
	if len(fired) != 0 {
		t.Fatalf("fired before the member applied the change: %v", fired)
	}
	mustOK(t, run(b, &task.SetDataRequest{Path: "/x", Data: []byte("v3"), Version: -1}, nil))
	if len(fired) != 2 || fired[0].Type != task.EventNodeDataChanged || fired[1].Type != task.EventNodeDataChanged {
		t.Fatalf("notifications %v: want one NodeDataChanged for each watch", fired)
	}
	if r := run(a, &task.GetDataRequest{Path: "/x"}, nil); string(r.Data) != "v3" {
		t.Fatalf("after the notifications a reads %q, want v3", r.Data)
	}
}

// lostSetThroughLaggingMember has a set /x to data, the set applied and
// its reply lost with a cut, and a's session come back through a member
// that has not applied it (LagAtReconnect, held for a minute).
func lostSetThroughLaggingMember(t *testing.T, srv *fakezk.Server, clk *fakezk.Clock, a *fakezk.Conn, data string) {
	t.Helper()
	set := task.Response{Err: errNoReply}
	a.Do(&task.SetDataRequest{Path: "/x", Data: []byte(data), Version: -1}, func(r task.Response) { set = r }, nil)
	srv.LagAtReconnect(a, time.Minute, true)
	srv.Partition(a, time.Second, true)
	clk.Advance(time.Second)
	srv.RunUntilIdle()
	if set.Err != task.ErrConnectionLoss {
		t.Fatalf("set cut off: %v, want connection loss", set.Err)
	}
}

// keptHistoryServer returns a deterministic server on its own clock
// that keeps history (KeepHistory), closed when t ends.
func keptHistoryServer(t *testing.T) (*fakezk.Clock, *fakezk.Server) {
	t.Helper()
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Clock: clk, Deterministic: true, Seed: 1})
	t.Cleanup(func() { srv.Close() })
	srv.KeepHistory()
	return clk, srv
}

// LagAtNewSession: the session a client opens after its session expired
// reaches a member behind what the expired session saw (a new session
// presents no zxid), until a sync (or the lag's end) catches it up;
// without it the new session reads what the server holds. The expired
// session had read /x at "new".
func TestLagAtNewSessionIsBehindTheOldSession(t *testing.T) {
	for _, lag := range []bool{false, true} {
		t.Run(fmt.Sprintf("lag=%v", lag), func(t *testing.T) {
			_, srv := keptHistoryServer(t)
			a := connect(t, srv, fakezk.ConnConfig{Timeout: 10 * time.Second})
			srv.RunUntilIdle()
			run := func(req task.Request) task.Response {
				got := task.Response{Err: errNoReply}
				a.Do(req, func(r task.Response) { got = r }, nil)
				srv.RunUntilIdle()
				return got
			}
			mustOK(t, run(&task.CreateRequest{Path: "/x", Data: []byte("old"), ACL: task.OpenACL}))
			mustOK(t, run(&task.SetDataRequest{Path: "/x", Data: []byte("new"), Version: -1}))
			if r := run(&task.GetDataRequest{Path: "/x"}); string(r.Data) != "new" {
				t.Fatalf("get /x before the expiry: %q %v", r.Data, r.Err)
			}
			old := a.SessionID()
			if lag {
				srv.LagAtNewSession(a, time.Minute, true)
			}
			srv.Expire(a)
			srv.RunUntilIdle()
			if a.SessionID() == old || a.SessionID() == 0 {
				t.Fatalf("no new session: %#x (was %#x)", a.SessionID(), old)
			}
			if lagging, _ := a.Lagging(); lagging != lag {
				t.Fatalf("lagging on the new session: %v, want %v", lagging, lag)
			}
			// The member's view goes back as far as the history kept:
			// here to before /x was created.
			r := run(&task.GetDataRequest{Path: "/x"})
			if behind := r.Err == task.ErrNoNode; behind != lag || !lag && string(r.Data) != "new" {
				t.Fatalf("get /x on the new session = %q (%v); want it behind the old session's read: %v", r.Data, r.Err, lag)
			}
			mustOK(t, run(&task.SyncRequest{Path: "/"}))
			if r := run(&task.GetDataRequest{Path: "/x"}); string(r.Data) != "new" {
				t.Fatalf("get /x after a sync = %q (%v), want new", r.Data, r.Err)
			}
		})
	}
}

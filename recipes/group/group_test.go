package group_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

func newTestWorld(t *testing.T, seed uint64, clients int) *sim.World {
	t.Helper()
	w, err := sim.New(sim.Config{Seed: seed, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func TestBadInput(t *testing.T) {
	for _, p := range []string{"", "rel", "/", "/a/", "/zookeeper", "/zookeeper/quota"} {
		if _, err := group.New(p); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("New(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	for _, id := range []string{"", "a/b", ".", "..", "x\x00"} {
		if err := group.ValidateID(id); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidPath", id, err)
		}
	}
	if _, err := group.NewClient(nil, "/g"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("NewClient(nil) = %v", err)
	}
	w := newTestWorld(t, 1, 1)
	g, _ := group.New("/g")
	if _, err := sim.Run(w, 0, g.Join("a/b", nil)); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("Join(bad id) = %v", err)
	}
	if _, err := sim.Run(w, 0, g.Join("big", make([]byte, task.MaxDataSize+1))); !errors.Is(err, task.ErrDataTooLarge) {
		t.Errorf("Join(too much data) = %v", err)
	}
	if _, err := sim.Run(w, 0, g.Watch(nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Watch(nil) = %v", err)
	}
	cl, _ := group.NewClient(w.Execs[0], "/g")
	if err := cl.Leave(context.Background(), nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Leave(nil) = %v", err)
	}
	if _, err := cl.Join(context.Background(), "", nil); !errors.Is(err, task.ErrInvalidPath) {
		t.Errorf("Client.Join(empty id) = %v", err)
	}
	// Nil values give typed errors, not panics.
	var ng *group.Group
	var nm *group.Member
	var nv *group.View
	var nc *group.Client
	if _, err := sim.Run(w, 0, ng.Join("a", nil)); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Join = %v", err)
	}
	if _, err := sim.Run(w, 0, ng.Watch(func(group.Change) {})); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Watch = %v", err)
	}
	if _, err := sim.Run(w, 0, nm.Leave()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Member.Leave = %v", err)
	}
	if _, err := sim.Run(w, 0, nv.Stop()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil View.Stop = %v", err)
	}
	if _, err := nc.Join(context.Background(), "a", nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil Client.Join = %v", err)
	}
	if err := cl.Leave(context.Background(), &group.Member{}); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Leave of a zero member = %v", err)
	}
	if got := w.Children("/g"); len(got) != 0 {
		t.Fatalf("bad input left nodes: %v", got)
	}
}

// A view reports joins and leaves, with the full set each time; a member
// whose session expires is registered again on the new session and the
// view sees it leave and come back; a member node deleted by someone else
// is created again; Leave removes it for good.
func TestMembership(t *testing.T) {
	w := newTestWorld(t, 2, 3)
	g, _ := group.New("/svc/g")
	var got []group.Change
	v, err := sim.Run(w, 2, g.Watch(func(ch group.Change) { got = append(got, ch) }))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Members) != 0 {
		t.Fatalf("first report %+v, want an empty group (the directory does not exist yet)", got)
	}
	a, err := sim.Run(w, 0, g.Join("a", []byte("host-a")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.Run(w, 1, g.Join("b", nil))
	if err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if want := []string{"a", "b"}; !slices.Equal(v.Members(), want) {
		t.Fatalf("view %v, want %v", v.Members(), want)
	}
	d, err := sim.Run(w, 2, task.Get(a.Path()))
	if err != nil || string(d.Data) != "host-a" {
		t.Fatalf("a's data %q %v", d.Data, err)
	}

	// a's session expires: its node goes, then comes back on the new session.
	old := a.Session()
	got = nil
	w.Server.Expire(w.Conns[0])
	w.Settle(func() bool { return a.Registered() && a.Session().Epoch != old.Epoch })
	w.Drive()
	if a.Session().ID == old.ID || !a.Registered() {
		t.Fatalf("a not registered again after expiry: %v registered=%v", a.Session(), a.Registered())
	}
	if st, ok := w.Server.NodeStat(a.Path()); !ok || st.EphemeralOwner != w.Conns[0].SessionID() {
		t.Fatalf("a's node after expiry: %v %+v", ok, st)
	}
	if !sawLeaveAndJoin(got, "a") {
		t.Fatalf("view did not report a leaving and joining again: %+v", got)
	}

	// Someone deletes b's node: b creates it again.
	got = nil
	if _, err := sim.Run(w, 2, task.Delete(b.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if st, ok := w.Server.NodeStat(b.Path()); !ok || st.EphemeralOwner != w.Conns[1].SessionID() {
		t.Fatal("b's node not created again")
	}

	// b leaves for good.
	if _, err := sim.Run(w, 1, b.Leave()); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if !errors.Is(b.Err(), group.ErrLeft) || b.Registered() {
		t.Fatalf("b after Leave: err %v registered %v", b.Err(), b.Registered())
	}
	if want := []string{"a"}; !slices.Equal(v.Members(), want) || !slices.Equal(w.Children("/svc/g"), want) {
		t.Fatalf("after b left: view %v, server %v", v.Members(), w.Children("/svc/g"))
	}
	if _, err := sim.Run(w, 1, b.Leave()); err != nil {
		t.Fatalf("second Leave: %v", err)
	}
	if _, err := sim.Run(w, 2, v.Stop()); err != nil || !errors.Is(v.Err(), group.ErrStopped) {
		t.Fatalf("stop: %v, view err %v", err, v.Err())
	}
}

func sawLeaveAndJoin(chs []group.Change, id string) bool {
	left := false
	for _, ch := range chs {
		if slices.Contains(ch.Removed, id) {
			left = true
		}
		if left && slices.Contains(ch.Added, id) {
			return true
		}
	}
	return false
}

// createDropper cuts the connection just after the first n creates are
// sent, the create applied: the reply is lost.
type createDropper struct {
	*fakezk.Conn
	w **sim.World
	n int
}

func (c *createDropper) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.Conn.Do(req, done, watch)
	if cr, ok := req.(*task.CreateRequest); ok && c.n > 0 && cr.Mode == task.Ephemeral {
		c.n--
		(*c.w).Server.Drop(c.Conn, true)
	}
}

// A Join whose create reply is lost (the create applied) finds its node by
// its owner; a Join for an id held by another session waits until that
// node goes.
func TestJoinLostReplyAndTakenID(t *testing.T) {
	var w *sim.World
	w, err := sim.New(sim.Config{Seed: 4, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 {
			return &createDropper{Conn: c, w: &w, n: 1}
		}
		return c
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g, _ := group.New("/g")
	if _, err := sim.Run(w, 1, task.Create("/g", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	a, err := sim.Run(w, 0, g.Join("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := w.Server.NodeStat(a.Path()); !ok || st.EphemeralOwner != w.Conns[0].SessionID() {
		t.Fatal("a's node missing after a lost reply")
	}
	// Client 1 joins as "a" too: it waits for client 0's node to go.
	dup := sim.Submit(w, 1, g.Join("a", nil))
	w.Settle(func() bool { return dup.Done })
	if dup.Done {
		t.Fatalf("joined with an id another session holds: %+v", dup)
	}
	if _, err := sim.Run(w, 0, a.Leave()); err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return dup.Done })
	if !dup.Done || dup.Err != nil {
		t.Fatalf("join after the id was freed: %+v", dup)
	}
	if st, ok := w.Server.NodeStat(a.Path()); !ok || st.EphemeralOwner != w.Conns[1].SessionID() {
		t.Fatal("the id's node is not client 1's")
	}
}

// A Join that ends by deadline while its create's outcome is unknown (the
// client is cut off after sending it) leaves no node once the client is
// back.
func TestJoinDeadlineNoOrphan(t *testing.T) {
	w := newTestWorld(t, 5, 2)
	g, _ := group.New("/g")
	if _, err := sim.Run(w, 1, task.Create("/g", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	o := &sim.Outcome[*group.Member]{}
	executor.SubmitWith(w.Execs[0], g.Join("a", nil), executor.Options{Deadline: w.Clock.Now().Add(time.Second)},
		func(m *group.Member, err error) { o.V, o.Err, o.Done = m, err, true })
	w.Execs[0].RunUntilIdle() // the create is sent, not yet applied
	w.Server.Partition(w.Conns[0], 3*time.Second, true)
	w.Settle(func() bool { return o.Done })
	if !errors.Is(o.Err, task.ErrDeadlineExceeded) {
		t.Fatalf("join = %v, want deadline exceeded", o.Err)
	}
	if !w.Settle(func() bool { return len(w.Children("/g")) == 0 }) {
		t.Fatalf("orphan member node: %v", w.Children("/g"))
	}
}

// The blocking API on real goroutines: a watcher sees joins and leaves
// (coalesced since its last Next), a member's Leave, and Stop.
func TestBlocking(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second) // a report lost would leave a Next waiting
	var done []chan struct{}
	start := func(seed uint64) *group.Client {
		ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan struct{})
		go func() { defer close(ch); _ = ex.Run(ctx) }()
		done = append(done, ch)
		c, err := group.NewClient(ex, "/blocking/g")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	defer func() {
		stop()
		for _, ch := range done {
			<-ch
		}
	}()
	watcher, a, b := start(1), start(2), start(3)
	wt, err := watcher.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := wt.Next(ctx)
	if err != nil || len(first.Members) != 0 {
		t.Fatalf("first Next: %+v %v", first, err)
	}
	ma, err := a.Join(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.Join(ctx, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) < 2 {
		ch, err := wt.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ch.Added...)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"a", "b"}) {
		t.Fatalf("joins seen %v", seen)
	}
	if err := a.Leave(ctx, ma); err != nil {
		t.Fatal(err)
	}
	ch, err := wt.Next(ctx)
	if err != nil || !slices.Equal(ch.Removed, []string{"a"}) || !slices.Equal(ch.Members, []string{"b"}) {
		t.Fatalf("after a left: %+v %v", ch, err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	if _, err := wt.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with nothing new = %v", err)
	}
	cancel()
	// A slow reader: two joins reported with no Next between them. Next
	// returns the latest report (coalesced: both joins), not the first.
	c, d := start(4), start(5)
	mc, err := c.Join(ctx, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	md, err := d.Join(ctx, "d", nil)
	if err != nil {
		t.Fatal(err)
	}
	for !slices.Equal(wt.Members(), []string{"b", "c", "d"}) { // the view's report, on the executor's goroutine
		select {
		case <-ctx.Done():
			t.Fatalf("the view reports %v", wt.Members())
		case <-time.After(time.Millisecond):
		}
	}
	ch, err = wt.Next(ctx)
	if err != nil || !slices.Equal(ch.Members, []string{"b", "c", "d"}) || !slices.Equal(ch.Added, []string{"c", "d"}) {
		t.Fatalf("a slow reader's Next after two joins: %+v %v, want members [b c d], added [c d]", ch, err)
	}
	if err := wt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Next(ctx); !errors.Is(err, group.ErrStopped) {
		t.Fatalf("Next after Close = %v", err)
	}
	for _, l := range []struct {
		c *group.Client
		m *group.Member
	}{{b, mb}, {c, mc}, {d, md}} {
		if err := l.c.Leave(ctx, l.m); err != nil {
			t.Fatal(err)
		}
	}
}

// A view keeps following after its own connection drops with its listing
// in flight (applied or not), and after its own session expires (every
// watch ends with it): it lists and watches again, and sees the joins and
// leaves made meanwhile.
func TestViewAfterLossAndExpiry(t *testing.T) {
	for _, applied := range []bool{false, true} {
		w := newTestWorld(t, 6, 2)
		g, _ := group.New("/g")
		var last group.Change
		v, err := sim.Run(w, 1, g.Watch(func(ch group.Change) { last = ch }))
		if err != nil {
			t.Fatal(err)
		}
		a, err := sim.Run(w, 0, g.Join("a", nil))
		if err != nil {
			t.Fatal(err)
		}
		// The join fires the view's watch; its new listing is in flight
		// when the connection drops.
		w.Server.RunUntilIdle()
		w.Execs[1].RunUntilIdle()
		w.Server.Drop(w.Conns[1], applied)
		w.Settle(func() bool { return slices.Equal(v.Members(), []string{"a"}) })
		if !slices.Equal(v.Members(), []string{"a"}) {
			t.Fatalf("applied=%v: after the drop the view has %v", applied, v.Members())
		}
		// The view's session expires; a join and a leave happen meanwhile.
		w.Server.Expire(w.Conns[1])
		b, err := sim.Run(w, 0, g.Join("b", nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(w, 0, a.Leave()); err != nil {
			t.Fatal(err)
		}
		w.Settle(func() bool { return slices.Equal(v.Members(), []string{"b"}) })
		if !slices.Equal(v.Members(), []string{"b"}) || v.Err() != nil {
			t.Fatalf("applied=%v: after the expiry the view has %v (err %v), want [b]", applied, v.Members(), v.Err())
		}
		if !slices.Equal(last.Members, []string{"b"}) {
			t.Fatalf("last report %+v", last)
		}
		if _, err := sim.Run(w, 0, b.Leave()); err != nil {
			t.Fatal(err)
		}
		w.Settle(func() bool { return len(v.Members()) == 0 })
		if len(v.Members()) != 0 {
			t.Fatalf("view %v after everyone left", v.Members())
		}
	}
}

package group_test

// Promises of the package's docs that an adversarial review found broken,
// each with the schedule that broke it (they fail on the code before the
// fix), and three that held with no test of their own.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// settleFor drives w for d of simulated time.
func settleFor(w *sim.World, d time.Duration) {
	end := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(end) })
}

// Client.Leave: "m must have joined on this Client's executor ... or
// Leave does nothing and returns an error wrapping task.ErrInvalidArgument"
// (as the other recipes' Clients refuse another executor's handle).
// Client A (executor 0) joins "x"; given the member, Client B (executor
// 1, another session) used to return nil from Leave and end the member
// (its keeper canceled from B's goroutine) while the delete, run on B's
// session, left A's node: kept by nobody, listed by every view. Through a
// Client and through the task face, it is refused now and changes
// nothing.
func TestLeaveOnAnotherExecutor(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	ca, err := group.NewClient(w.Execs[0], "/g")
	if err != nil {
		t.Fatal(err)
	}
	cb, err := group.NewClient(w.Execs[1], "/g")
	if err != nil {
		t.Fatal(err)
	}
	var m *group.Member
	var joinErr, leaveErr error
	joined, left := false, false
	w.Go(0, func(a *sim.Actor) {
		m, joinErr = ca.Join(a.Context(), "x", nil)
		joined = true
	})
	if !w.Settle(func() bool { return joined }) || joinErr != nil {
		t.Fatalf("join: %v (done %v)", joinErr, joined)
	}
	w.Go(1, func(a *sim.Actor) {
		leaveErr = cb.Leave(a.Context(), m)
		left = true
	})
	if !w.Settle(func() bool { return left }) {
		t.Fatal("Leave never returned")
	}
	if !errors.Is(leaveErr, task.ErrInvalidArgument) {
		t.Errorf("Client.Leave of a member joined on another executor = %v, want ErrInvalidArgument", leaveErr)
	}
	if _, err := sim.Run(w, 1, m.Leave()); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("the task Leave run on another executor = %v, want ErrInvalidArgument", err)
	}
	settleFor(w, 10*time.Second)
	if st, ok := w.Server.NodeStat(m.Path()); !ok || st.EphemeralOwner != w.Conns[0].SessionID() || m.Err() != nil || !m.Registered() {
		t.Fatalf("after the refused Leaves: node there %v, Err %v, Registered %v; want the member as it was", ok, m.Err(), m.Registered())
	}
	if _, err := sim.Run(w, 0, m.Leave()); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Server.NodeStat(m.Path()); ok || !errors.Is(m.Err(), group.ErrLeft) {
		t.Fatalf("after its own executor's Leave: node there %v, Err %v", ok, m.Err())
	}
}

func closedCh(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Member.Done: "Done is closed when the membership ends: Leave (Err is
// ErrLeft), the executor closed (task.ErrClosed), or an error no retry
// settles." and View.Done likewise; Watcher.Next "blocks until there is a
// difference, the view ends (its error), or ctx ends."
//
// The executor closes while a member stays and a view follows: both end
// with task.ErrClosed. (No existing test closes the executor under a
// Member or a View.)
func TestExecutorCloseEndsMemberAndView(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	g, _ := group.New("/g")
	m, err := sim.Run(w, 0, g.Join("x", nil))
	if err != nil {
		t.Fatal(err)
	}
	v, err := sim.Run(w, 0, g.Watch(func(group.Change) {}))
	if err != nil {
		t.Fatal(err)
	}
	w.Execs[0].Close()
	settleFor(w, time.Second)
	if !closedCh(m.Done()) || !errors.Is(m.Err(), task.ErrClosed) {
		t.Errorf("member after Close: done %v err %v", closedCh(m.Done()), m.Err())
	}
	if !closedCh(v.Done()) || !errors.Is(v.Err(), task.ErrClosed) {
		t.Errorf("view after Close: done %v err %v", closedCh(v.Done()), v.Err())
	}
	if m.Registered() {
		t.Error("Registered true after the executor closed")
	}
}

// Package doc, Errors: "constructors and Join refuse an invalid directory
// or id (task.ErrInvalidPath), a nil executor, report function or member
// (task.ErrInvalidArgument)"; Group: "A Group holds no state: one value
// may be shared by any number of flows".
//
// A zero Group (directory "") is not refused: its Join registers the
// member as the ephemeral node "/x" at the root of the tree.
func TestZeroGroupIsRefused(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	var g group.Group
	m, err := sim.Run(w, 0, g.Join("x", nil))
	if err == nil {
		_, atRoot := w.Server.NodeStat("/x")
		t.Fatalf("Join on a zero Group (directory %q) succeeded: member path %q, node /x at the root of the tree: %v; want task.ErrInvalidPath",
			g.Dir(), m.Path(), atRoot)
	}
	if !errors.Is(err, task.ErrInvalidPath) && !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("Join on a zero Group = %v", err)
	}
}

// Package doc, Errors: "constructors and Join refuse ... a nil executor
// ... (task.ErrInvalidArgument)"; Client: "its methods are safe from any
// goroutine". A nil *Client is refused with ErrInvalidArgument, but a
// zero Client (nil executor, nil group) panics in Join, Leave and Watch
// (c.g.Dir() on a nil *Group, client.go:62, 77, 100).
func TestZeroClientIsRefused(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		f    func(c *group.Client) error
	}{
		{"Join", func(c *group.Client) error { _, err := c.Join(ctx, "x", nil); return err }},
		{"Watch", func(c *group.Client) error { _, err := c.Watch(ctx); return err }},
		{"Leave", func(c *group.Client) error {
			w := newTestWorld(t, 1, 1)
			g, _ := group.New("/g")
			m, err := sim.Run(w, 0, g.Join("x", nil))
			if err != nil {
				t.Fatal(err)
			}
			return c.Leave(ctx, m)
		}},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			var err error
			panicked := func() (p any) {
				defer func() { p = recover() }()
				err = call.f(&group.Client{})
				return nil
			}()
			if panicked != nil {
				t.Fatalf("%s on a zero Client panicked: %v; want task.ErrInvalidArgument", call.name, panicked)
			}
			if !errors.Is(err, task.ErrInvalidArgument) {
				t.Fatalf("%s on a zero Client = %v, want task.ErrInvalidArgument", call.name, err)
			}
		})
	}
}

// ErrLeft: "ErrLeft is Member.Err after Leave (unless the membership had
// ended before: Err then keeps why)". The member's keeper ends with an
// error no retry settles (an operator deletes the node and takes CREATE
// off the directory: the keeper's create fails with ErrNoAuth); a later
// Leave succeeds and Err still says why the member ended. (The doc used
// to promise ErrLeft after any Leave.)
func TestLeaveAfterTheMemberEnded(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	g, _ := group.New("/g")
	m, err := sim.Run(w, 0, g.Join("x", nil))
	if err != nil {
		t.Fatal(err)
	}
	ro := []task.ACL{{Perms: task.PermRead | task.PermDelete, Scheme: "world", ID: "anyone"}}
	if _, err := sim.Run(w, 1, task.SetACL("/g", ro, -1)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 1, task.Delete(m.Path(), task.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return closedCh(m.Done()) }) {
		t.Fatal("the keeper did not end on ErrNoAuth")
	}
	if !errors.Is(m.Err(), task.ErrNoAuth) {
		t.Fatalf("member ended with %v, want ErrNoAuth", m.Err())
	}
	if _, err := sim.Run(w, 0, m.Leave()); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if !errors.Is(m.Err(), task.ErrNoAuth) {
		t.Fatalf("after Leave Err is %v, want still the keeper's ErrNoAuth", m.Err())
	}
}

// Group.Watch: "Watch returns a task that starts a View of the group's
// members and succeeds with it once the first listing has been
// reported."; package doc: "Tasks fail with the scope's error ...,
// task.ErrSessionExpired or task.ErrClosed ..., or an *task.OpError that
// a retry cannot settle (task.ErrNoAuth, say)".
//
// The directory refuses READ to the view's session: the first listing
// fails with ErrNoAuth, the follower ends the View (View.end), but the
// Watch task is never resumed (v.first is left pending): the task hangs
// until its scope ends, and Client.Watch until its ctx ends, returning
// the ctx's error instead of ErrNoAuth.
func TestWatchEndsWhenItsFirstListingIsRefused(t *testing.T) {
	t.Run("task", func(t *testing.T) {
		w := newTestWorld(t, 1, 2)
		g, _ := group.New("/g")
		noRead := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
		if _, err := sim.Run(w, 1, task.CreateWith(&task.CreateRequest{Path: "/g", Mode: task.Persistent, ACL: noRead})); err != nil {
			t.Fatal(err)
		}
		o := sim.Submit(w, 0, g.Watch(func(group.Change) {}))
		settleFor(w, time.Minute)
		if !o.Done {
			t.Fatal("Watch never ended: the first listing failed with ErrNoAuth, and the task waits for a first report that never comes")
		}
		if !errors.Is(o.Err, task.ErrNoAuth) {
			t.Fatalf("Watch = %v, want ErrNoAuth", o.Err)
		}
	})
	t.Run("client", func(t *testing.T) {
		w := newTestWorld(t, 1, 2)
		noRead := []task.ACL{{Perms: task.PermAll &^ task.PermRead, Scheme: "world", ID: "anyone"}}
		if _, err := sim.Run(w, 1, task.CreateWith(&task.CreateRequest{Path: "/g", Mode: task.Persistent, ACL: noRead})); err != nil {
			t.Fatal(err)
		}
		c, _ := group.NewClient(w.Execs[0], "/g")
		var err error
		done := false
		w.Go(0, func(a *sim.Actor) {
			ctx, cancel := a.WithTimeout(a.Context(), time.Minute)
			defer cancel()
			_, err = c.Watch(ctx)
			done = true
		})
		if !w.Settle(func() bool { return done }) {
			t.Fatal("Client.Watch never returned")
		}
		if !errors.Is(err, task.ErrNoAuth) {
			t.Fatalf("Client.Watch = %v after waiting out its ctx, want ErrNoAuth at once", err)
		}
	})
}

// cancelOnExists cancels a flow once a create of path has failed with
// ErrNodeExists and the flow has acted on it (its next request on path,
// the read that settles the create, is sent), once armed; it counts the
// deletes of path the client sends.
type cancelOnExists struct {
	*fakezk.Conn
	path    string
	cancel  func()
	exists  bool // a create of path failed with ErrNodeExists
	deletes int
}

func (c *cancelOnExists) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	switch r := req.(type) {
	case *task.CreateRequest:
		if r.Path == c.path && c.cancel != nil {
			inner := done
			done = func(resp task.Response) {
				c.exists = c.exists || errors.Is(resp.Err, task.ErrNodeExists)
				inner(resp)
			}
		}
	case *task.ExistsRequest:
		if r.Path == c.path && c.exists && c.cancel != nil {
			cancel := c.cancel
			c.cancel = nil
			defer cancel()
		}
	case *task.DeleteRequest:
		if r.Path == c.path {
			c.deletes++
		}
	}
	c.Conn.Do(req, done, watch)
}

// Client.Join: "If ctx ends first, a node the flow made is deleted"; the
// package doc: a Join of an id held by another member of the session
// waits until it goes. Member x is joined and stays. A second Join of x
// on the same session (a retry from another goroutine of the same
// Client) finds the node taken (ErrNodeExists): it used to take that
// node for its own (two Members sharing one node, either's Leave
// deleting the other's), and when canceled after that reply its cleanup
// deleted the live member's node, which it never made (the views saw x
// leave, then come back when its keeper made the node again). Now it
// waits, leaves the node alone when canceled, and joins once x has left.
func TestCanceledSecondJoinLeavesTheMembersNode(t *testing.T) {
	var cw *cancelOnExists
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			cw = &cancelOnExists{Conn: conn, path: "/g/x"}
			return cw
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	g, _ := group.New("/g")
	m, err := sim.Run(w, 0, g.Join("x", []byte("live")))
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	if _, err := sim.Run(w, 1, g.Watch(func(ch group.Change) { removed = append(removed, ch.Removed...) })); err != nil {
		t.Fatal(err)
	}
	before, _ := w.Server.NodeStat(m.Path())
	o := &sim.Outcome[*group.Member]{}
	f := executor.Submit(w.Execs[0], g.Join("x", []byte("second")), func(v *group.Member, err error) { o.V, o.Err, o.Done = v, err, true })
	cw.cancel = f.Cancel
	if !w.Settle(func() bool { return o.Done }) {
		t.Fatal("second join never ended")
	}
	if !errors.Is(o.Err, task.ErrCanceled) || cw.cancel != nil {
		t.Fatalf("second join = %v (canceled after its ErrNodeExists: %v), want canceled after it", o.Err, cw.cancel == nil)
	}
	settleFor(w, 5*time.Second)
	after, ok := w.Server.NodeStat(m.Path())
	if m.Err() != nil {
		t.Fatalf("the live member ended: %v", m.Err())
	}
	if cw.deletes > 0 || !ok || after.Czxid != before.Czxid || len(removed) > 0 {
		t.Fatalf("a Join that failed (%v) deleted the node of live member x, which it never made: "+
			"%d delete(s) of %s sent by a client that is not leaving, node czxid %d -> %d (present %v), views saw removed %v",
			o.Err, cw.deletes, m.Path(), before.Czxid, after.Czxid, ok, removed)
	}
	// Not canceled, a second Join waits while x is held, then joins.
	second := sim.Submit(w, 0, g.Join("x", []byte("second")))
	settleFor(w, 5*time.Second)
	if second.Done {
		t.Fatalf("a second Join of x on the session ended (%v) while x was held", second.Err)
	}
	if _, err := sim.Run(w, 0, m.Leave()); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return second.Done }) || second.Err != nil {
		t.Fatalf("second join after x left: %+v", second)
	}
	if data, _, _ := w.NodeData(m.Path()); string(data) != "second" {
		t.Fatalf("x's node holds %q, want the second member's data", data)
	}
}

// Package doc: "once the group stops changing and the session is
// connected the last report is the server's member list: the view
// converges after every fault", and the member "stays registered"; PROTOCOL
// Faults: an operator who deletes a member's node.
//
// Holds. Checks what no existing test does: an operator deletes the
// member's node and the group directory at once (one multi), so the
// keeper's create finds no directory (ErrNoNode) and the view's watch
// fires on the directory's deletion; then, on its own, a second time with
// the directory re-created empty by the operator. The member registers
// again under a new directory, and the view converges to it.
func TestOperatorDeletesTheDirectory(t *testing.T) {
	w := newTestWorld(t, 1, 3)
	g, _ := group.New("/app/g")
	m, err := sim.Run(w, 0, g.Join("x", nil))
	if err != nil {
		t.Fatal(err)
	}
	v, err := sim.Run(w, 1, g.Watch(func(group.Change) {}))
	if err != nil {
		t.Fatal(err)
	}
	for round, recreate := range []bool{false, true} {
		ops := []task.MultiOp{task.DeleteOp(m.Path(), task.AnyVersion), task.DeleteOp("/app/g", task.AnyVersion)}
		if recreate {
			ops = append(ops, task.CreateOp("/app/g", nil, task.Persistent))
		}
		if _, err := sim.Run(w, 2, task.Multi(ops...)); err != nil {
			t.Fatalf("round %d: operator: %v", round, err)
		}
		settleFor(w, 5*time.Second)
		st, ok := w.Server.NodeStat(m.Path())
		if !ok || st.EphemeralOwner != w.Conns[0].SessionID() || !m.Registered() || m.Err() != nil {
			t.Fatalf("round %d: member after the directory went: node %v, registered %v, err %v", round, ok, m.Registered(), m.Err())
		}
		if got := v.Members(); len(got) != 1 || got[0] != "x" || v.Err() != nil {
			t.Fatalf("round %d: view %v (err %v), server %v", round, got, v.Err(), w.Children("/app/g"))
		}
	}
}

// Member.Session: "Session is the session of the member's latest
// registration."; Registered: "false from an expiry until the
// registration on the new session is made".
//
// x's session expires and another process takes id x before x's keeper
// is back (it waits for that node, as PROTOCOL step 3 says). Registered
// is false, rightly; but Session already names the new session, on which
// no registration was ever made: the keeper's round records the session
// also when it finds the node not ours (member.go keep, m.mark(s.Session(),
// false)).
func TestSessionIsTheLatestRegistrations(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	g, _ := group.New("/g")
	m, err := sim.Run(w, 0, g.Join("x", nil))
	if err != nil {
		t.Fatal(err)
	}
	old := m.Session()
	other := sim.Submit(w, 1, g.Join("x", nil)) // waits for x's node to go
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool { return other.Done }) || other.Err != nil {
		t.Fatalf("the other process's join: %+v", other)
	}
	settleFor(w, 5*time.Second)
	st, _ := w.Server.NodeStat(m.Path())
	if st.EphemeralOwner != w.Conns[1].SessionID() {
		t.Skip("x's keeper registered first: not the schedule this test builds")
	}
	if m.Registered() {
		t.Fatal("Registered true while another session holds x")
	}
	if s := m.Session(); s.ID != old.ID {
		t.Fatalf("Session() = %#x (epoch %d), a session x never registered on (its latest registration was on %#x, epoch %d; the node is %#x's)",
			s.ID, s.Epoch, old.ID, old.Epoch, st.EphemeralOwner)
	}
}

// Package doc: "Leave and Stop are started whatever their ctx ... A
// background delete that fails for good goes to the executor's
// Config.OnError".
//
// Holds. Checks what no existing test does: Client.Leave with a ctx that
// has ended returns the ctx's error at once, Done closes, and the delete,
// refused (the directory's ACL no longer grants DELETE), is reported to
// OnError (World.Errs) with ErrNoAuth.
func TestBackgroundLeaveFailureGoesToOnError(t *testing.T) {
	w := newTestWorld(t, 1, 2)
	c, _ := group.NewClient(w.Execs[0], "/g")
	var m *group.Member
	var leaveErr error
	done := false
	w.Go(0, func(a *sim.Actor) {
		var err error
		if m, err = c.Join(a.Context(), "x", nil); err != nil {
			t.Error(err)
			done = true
			return
		}
		noDelete := []task.ACL{{Perms: task.PermAll &^ task.PermDelete, Scheme: "world", ID: "anyone"}}
		if _, err := executor.Await(a.Context(), w.Execs[1], task.SetACL("/g", noDelete, -1)); err != nil {
			t.Error(err)
		}
		ctx, cancel := a.WithCancel(a.Context())
		cancel()
		leaveErr = c.Leave(ctx, m)
		done = true
	})
	if !w.Settle(func() bool { return done }) || m == nil {
		t.Fatal("actor did not finish")
	}
	if !errors.Is(leaveErr, context.Canceled) || !closedCh(m.Done()) || !errors.Is(m.Err(), group.ErrLeft) {
		t.Fatalf("Leave with an ended ctx = %v, Done %v, Err %v", leaveErr, closedCh(m.Done()), m.Err())
	}
	settleFor(w, 5*time.Second)
	found := false
	for _, err := range w.Errs {
		if errors.Is(err, task.ErrNoAuth) {
			found = true
		}
	}
	if !found {
		t.Fatalf("the refused background delete was not reported to OnError: %v", w.Errs)
	}
}

// Member.Leave: "a node already gone, or a session that ended (the node
// went with it), is success"; Client.Leave: "Leave ends m's membership
// (Member.Leave)"; Watcher.Stop treats a closed executor as done.
func TestClientLeaveAfterClose(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	c, _ := group.NewClient(w.Execs[0], "/g")
	g := c.Group()
	m, err := sim.Run(w, 0, g.Join("x", nil))
	if err != nil {
		t.Fatal(err)
	}
	w.Execs[0].Close()
	settleFor(w, time.Second)
	if err := c.Leave(context.Background(), m); err != nil {
		t.Fatalf("Client.Leave after the executor closed (the session ended, the node went with it) = %v, want nil", err)
	}
}

// Member.Leave: "Leave is idempotent"; PROTOCOL, Join: "to change a
// member's data, Leave and Join again"; package doc: "While a member has
// not left and its executor's session is connected, its node exists".
// m1 joins x and leaves (a data change, as PROTOCOL advises), and m2
// joins x on the same executor. A second Leave of m1 (the doc's `defer
// c.Leave(ctx, me)` bound to the old member, or a retried Leave), through
// the task face and through the Client, used to delete m2's node: it
// deleted any node of its session at x (zkops.DeleteOwned), and m2's is
// one. m2, which never left, lost its node (czxid 7 -> 9: its keeper made
// it again, and every view saw x leave and come back). A Member now
// deletes only the incarnation it registered. It fails on the code before
// the fix.
func TestSecondLeaveKeepsTheNextMembersNode(t *testing.T) {
	run := func(t *testing.T, client bool) {
		w := newTestWorld(t, 1, 2)
		c, _ := group.NewClient(w.Execs[0], "/g")
		g := c.Group()
		var removed []string
		if _, err := sim.Run(w, 1, g.Watch(func(ch group.Change) { removed = append(removed, ch.Removed...) })); err != nil {
			t.Fatal(err)
		}
		var m1, m2 *group.Member
		var secondLeave error
		if client {
			done := false
			var stepErr error
			var before int64
			w.Go(0, func(a *sim.Actor) {
				defer func() { done = true }()
				ctx := a.Context()
				var err error
				if m1, err = c.Join(ctx, "x", []byte("v1")); err != nil {
					stepErr = err
					return
				}
				if err = c.Leave(ctx, m1); err != nil {
					stepErr = err
					return
				}
				if m2, err = c.Join(ctx, "x", []byte("v2")); err != nil {
					stepErr = err
					return
				}
				st, _ := w.Server.NodeStat(m2.Path())
				before = st.Czxid
				removed = nil
				secondLeave = c.Leave(ctx, m1) // the deferred Leave of the old member
			})
			if !w.Settle(func() bool { return done }) || stepErr != nil {
				t.Fatalf("actor: done %v, err %v", done, stepErr)
			}
			checkNextMemberKept(t, w, m2, before, secondLeave, &removed)
			return
		}
		var err error
		if m1, err = sim.Run(w, 0, g.Join("x", []byte("v1"))); err != nil {
			t.Fatal(err)
		}
		if _, err = sim.Run(w, 0, m1.Leave()); err != nil {
			t.Fatal(err)
		}
		if m2, err = sim.Run(w, 0, g.Join("x", []byte("v2"))); err != nil {
			t.Fatal(err)
		}
		st, _ := w.Server.NodeStat(m2.Path())
		removed = nil
		_, secondLeave = sim.Run(w, 0, m1.Leave())
		checkNextMemberKept(t, w, m2, st.Czxid, secondLeave, &removed)
	}
	t.Run("task", func(t *testing.T) { run(t, false) })
	t.Run("client", func(t *testing.T) { run(t, true) })
}

func checkNextMemberKept(t *testing.T, w *sim.World, m2 *group.Member, before int64, secondLeave error, removed *[]string) {
	t.Helper()
	settleFor(w, 5*time.Second)
	after, ok := w.Server.NodeStat(m2.Path())
	if secondLeave != nil {
		t.Logf("second Leave of m1 = %v", secondLeave)
	}
	if !ok || after.Czxid != before || len(*removed) > 0 {
		t.Fatalf("a second Leave of the member that had left deleted the node of member m2 (joined since with the same id, never left): "+
			"node czxid %d -> %d (present %v), views saw removed %v after it", before, after.Czxid, ok, *removed)
	}
}

// The executor's doc: "a blocking call (Await, AwaitAcrossExpiry, Run, and
// every blocking recipe API) made while running a job of any executor
// gives ErrOnExecutor"; Watcher: "Safe from any goroutine but the
// executor's". Watcher.Next called from a job of the executor (a task
// body, here) with nothing new to return used to block the executor
// goroutine, the one that would make the report it waits for, until its
// ctx ended (here a 300ms real-time deadline, the test's bound on the
// hang; with context.Background it hung forever), and returned
// DeadlineExceeded instead of ErrOnExecutor at once. Watcher.Stop gave
// ErrOnExecutor already (blocking.Give). It fails on the code before the
// fix.
func TestWatcherNextOnExecutorFailsAtOnce(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	c, _ := group.NewClient(w.Execs[0], "/g")
	var wt *group.Watcher
	done := false
	w.Go(0, func(a *sim.Actor) {
		defer func() { done = true }()
		var err error
		if wt, err = c.Watch(a.Context()); err != nil {
			t.Error(err)
			return
		}
		if _, err = wt.Next(a.Context()); err != nil { // the first Next: the empty group
			t.Error(err)
		}
	})
	if !w.Settle(func() bool { return done }) || wt == nil {
		t.Fatal("watch did not start")
	}
	var nextErr error
	var stopErr error
	var nextTook time.Duration
	_, err := sim.Run(w, 0, task.Func(func(*task.Scope) (task.Unit, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, nextErr = wt.Next(ctx)
		nextTook = time.Since(start)
		stopErr = wt.Stop(context.Background())
		return task.Unit{}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(stopErr, executor.ErrOnExecutor) {
		t.Errorf("Watcher.Stop on the executor = %v, want ErrOnExecutor", stopErr)
	}
	if !errors.Is(nextErr, executor.ErrOnExecutor) {
		t.Fatalf("Watcher.Next on the executor goroutine = %v after blocking the executor for %v (until its ctx ended), want executor.ErrOnExecutor at once",
			nextErr, nextTook.Round(10*time.Millisecond))
	}
}

// Package doc, Errors: nil values are refused with
// task.ErrInvalidArgument ("a nil executor, report function, member or
// Watcher"), as a nil *View's Stop, a nil *Member's Leave and a nil or
// zero *Client's methods are (TestBadInput, TestZeroClientIsRefused). A
// nil *Watcher (a failed Watch's result used by mistake: `w, err :=
// c.Watch(ctx)` returns nil with the error, and the doc's example defers
// w.Stop) used to panic in Next, Stop and Members, and a zero Watcher
// answered its first Next with an empty Change and no error, then
// panicked (its View is nil). It fails on the code before the fix.
func TestNilWatcherIsRefused(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Next must not wait: a refused call returns at once anyway
	calls := []struct {
		name string
		f    func(w *group.Watcher) error
	}{
		{"Next", func(w *group.Watcher) error {
			if _, err := w.Next(ctx); err != nil {
				return err
			}
			_, err := w.Next(ctx)
			return err
		}},
		{"Stop", func(w *group.Watcher) error { return w.Stop(context.Background()) }},
		// Members has no error to return: it must only not panic.
		{"Members", func(w *group.Watcher) error { _ = w.Members(); return task.ErrInvalidArgument }},
	}
	for _, recv := range []struct {
		name string
		w    *group.Watcher
	}{{"nil", nil}, {"zero", &group.Watcher{}}} {
		for _, call := range calls {
			t.Run(recv.name+"/"+call.name, func(t *testing.T) {
				var err error
				p := func() (p any) {
					defer func() { p = recover() }()
					err = call.f(recv.w)
					return nil
				}()
				if p != nil {
					t.Fatalf("%s on a %s Watcher panicked: %v; want an error wrapping task.ErrInvalidArgument", call.name, recv.name, p)
				}
				if !errors.Is(err, task.ErrInvalidArgument) {
					t.Fatalf("%s on a %s Watcher = %v, want task.ErrInvalidArgument", call.name, recv.name, err)
				}
			})
		}
	}
}

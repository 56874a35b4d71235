package discovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// noDelete is an ACL that lets anyone do everything in a directory but
// delete its children: an operator closing it to deletes for a while.
var noDelete = []task.ACL{{Perms: task.PermAll &^ task.PermDelete, Scheme: "world", ID: "anyone"}}

// Unregister "ends the registration and deletes the instance's node",
// for every service type. An operator's ACL refuses the delete for a
// while: a Dynamic instance's Unregister fails with task.ErrNoAuth and
// deletes its node in the background once the ACL lets it (recipes/group,
// zkops.KeepDeleting); a Static one's failed the same way, but nothing
// deleted it after: the node stayed registered for good (Registered
// false, Err ErrUnregistered), found by every query and cache, though its
// user had asked to unregister it. Through the task face and through a
// Client.
func TestRefusedUnregisterDeletesOnceAllowed(t *testing.T) {
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static, discovery.Permanent} {
		for _, face := range []string{"task", "client"} {
			t.Run(string(typ)+"/"+face, func(t *testing.T) {
				canarytest.Both(t, "discovery/refused-unregister-dropped", func(t *testing.T, bug bool) {
					stays := refusedUnregister(t, typ, face)
					switch shows := bug && typ != discovery.Dynamic; {
					case shows && !stays:
						t.Fatal("with the canary, the node went: the test does not show the bug")
					case !shows && stays:
						t.Error("the node is still registered a minute after the ACL let its delete")
					}
				})
			})
		}
	}
}

// refusedUnregister runs the schedule of
// TestRefusedUnregisterDeletesOnceAllowed for an instance of type typ
// through face ("task" or "client") and reports whether the node is
// still there a minute after the ACL let its delete.
func refusedUnregister(t *testing.T, typ discovery.ServiceType, face string) (stays bool) {
	w := newTestWorld(t, 1, 1)
	c, err := discovery.NewClient(w.Execs[0], "/services")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := sim.Run(w, 0, c.Discovery().Register(discovery.Instance{Name: "web", ID: "a", ServiceType: typ}))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminSetACL(w.ServerPath("/services/web"), noDelete); err != nil {
		t.Fatal(err)
	}
	if face == "task" {
		_, err = sim.Run(w, 0, reg.Unregister())
	} else {
		done := false
		w.Go(0, func(a *sim.Actor) {
			err = c.Unregister(a.Context(), reg)
			done = true
		})
		if !w.Settle(func() bool { return done }) {
			t.Fatal("Client.Unregister never returned")
		}
	}
	if !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("Unregister under an ACL that refuses deletes = %v, want task.ErrNoAuth", err)
	}
	if _, ok := w.NodeStat(reg.Path()); !ok {
		t.Fatal("the node is gone though the ACL refused its delete: the test checks nothing")
	}
	if reg.Registered() {
		t.Error("Registered after Unregister")
	}
	if err := w.Server.AdminSetACL(w.ServerPath("/services/web"), task.OpenACL); err != nil {
		t.Fatal(err)
	}
	until := w.Clock.Now().Add(time.Minute) // a few RecheckAfter (twice the session timeout)
	w.Settle(func() bool {
		_, ok := w.NodeStat(reg.Path())
		return !ok || !w.Clock.Now().Before(until)
	})
	_, stays = w.NodeStat(reg.Path())
	if stays {
		t.Logf("%s still there (reported: %v)", reg.Path(), w.Errs)
	}
	return stays
}

// While an instance's refused Unregister goes on in the background, a
// Register of the same instance on the executor waits for it: a Static
// or Permanent one's waits for every Unregister of the instance going
// on there (Discovery.Register), whose delete, once the ACL lets it,
// would otherwise take the node Register kept; a Dynamic one's waits
// until the node of the registration of its id, ended but still there,
// is gone (group.Group.Join). Once the ACL lets the delete, the Register
// makes the node again, and it stays.
func TestRegisterWaitsForARefusedUnregister(t *testing.T) {
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
		t.Run(string(typ), func(t *testing.T) { registerAfterRefusedUnregister(t, typ) })
	}
}

func registerAfterRefusedUnregister(t *testing.T, typ discovery.ServiceType) {
	w := newTestWorld(t, 1, 1)
	c, err := discovery.NewClient(w.Execs[0], "/services")
	if err != nil {
		t.Fatal(err)
	}
	inst := discovery.Instance{Name: "web", ID: "a", ServiceType: typ}
	reg, err := sim.Run(w, 0, c.Discovery().Register(inst))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminSetACL(w.ServerPath("/services/web"), noDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, reg.Unregister()); !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("Unregister = %v, want task.ErrNoAuth", err)
	}
	if !errors.Is(reg.Err(), discovery.ErrUnregistered) {
		t.Fatalf("the registration's Err after Unregister = %v, want ErrUnregistered (it has ended)", reg.Err())
	}
	var again *discovery.Registration
	var firstErr, regErr error
	first, done := false, false
	open := make(chan struct{}) // closed once the ACL lets deletes again
	w.Go(0, func(a *sim.Actor) {
		ctx, cancel := a.WithTimeout(a.Context(), 10*time.Second)
		defer cancel()
		_, firstErr = c.Register(ctx, inst)
		first = true
		if err := a.Wait(a.Context(), open); err != nil {
			regErr = err
			return
		}
		again, regErr = c.Register(a.Context(), inst)
		done = true
	})
	if !w.Settle(func() bool { return first }) {
		t.Fatal("Register never returned")
	}
	if !errors.Is(firstErr, context.DeadlineExceeded) {
		t.Fatalf("Register while the refused Unregister goes on = %v, want it to wait (its ctx's end)", firstErr)
	}
	if err := w.Server.AdminSetACL(w.ServerPath("/services/web"), task.OpenACL); err != nil {
		t.Fatal(err)
	}
	close(open)
	if !w.Settle(func() bool { return done }) || regErr != nil {
		t.Fatalf("Register once the ACL lets the delete: done %v, %v", done, regErr)
	}
	until := w.Clock.Now().Add(time.Minute)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
	if _, ok := w.NodeStat(again.Path()); !ok || !again.Registered() {
		t.Errorf("%s: there %v, Registered %v a minute after Register returned; want both", again.Path(), ok, again.Registered())
	}
}

// A persistent instance's refused delete goes on across a session
// expiry (no session's end deletes its node): the session expires while
// the ACL refuses the delete, and the node goes on the next session once
// the ACL lets it.
func TestRefusedStaticUnregisterAcrossExpiry(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	reg, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: "a", ServiceType: discovery.Static}))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Server.AdminSetACL(w.ServerPath("/services/web"), noDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, reg.Unregister()); !errors.Is(err, task.ErrNoAuth) {
		t.Fatalf("Unregister = %v, want task.ErrNoAuth", err)
	}
	sess, _ := w.Execs[0].Current()
	w.Server.Expire(w.Conns[0])
	if !w.Settle(func() bool {
		s, st := w.Execs[0].Current()
		return st == task.StateConnected && s.ID != sess.ID
	}) {
		t.Fatal("no new session")
	}
	if err := w.Server.AdminSetACL(w.ServerPath("/services/web"), task.OpenACL); err != nil {
		t.Fatal(err)
	}
	until := w.Clock.Now().Add(time.Minute)
	w.Settle(func() bool {
		_, ok := w.NodeStat(reg.Path())
		return !ok || !w.Clock.Now().Before(until)
	})
	if _, ok := w.NodeStat(reg.Path()); ok {
		t.Errorf("%s is still registered a minute after the ACL let its delete, on the next session (reported: %v)", reg.Path(), w.Errs)
	}
}

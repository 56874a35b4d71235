package fakezk_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
)

// A crashed process hears nothing more; its session and ephemerals live
// until the timeout expires them, and its watches then end with it.
func TestCrashKeepsSessionUntilTimeout(t *testing.T) {
	srv, clk := detServer(1)
	a, ra := start(t, srv, 4*time.Second)
	b, rb := start(t, srv, 4*time.Second)
	a.Do(&task.CreateRequest{Path: "/e", Mode: task.Ephemeral, ACL: task.OpenACL}, ra.done("create"), nil)
	srv.RunUntilIdle()
	b.Do(&task.ExistsRequest{Path: "/e", Watch: true}, rb.done("exists"), rb.watch("watch"))
	srv.RunUntilIdle()
	a.Do(&task.GetDataRequest{Path: "/e"}, ra.done("in flight"), nil)
	srv.Crash(a, false)
	srv.RunUntilIdle()
	clk.Advance(3 * time.Second)
	srv.RunUntilIdle()
	if _, ok := srv.NodeStat("/e"); !ok {
		t.Fatal("the ephemeral went before the session's timeout")
	}
	clk.Advance(2 * time.Second)
	srv.RunUntilIdle()
	if _, ok := srv.NodeStat("/e"); ok {
		t.Fatal("the ephemeral outlived the crashed process's session")
	}
	check(t, ra.get()[1:], "create ok") // nothing after the crash
	check(t, rb.get()[1:], "exists ok", "watch NodeDeleted Connected")
	if n := len(srv.Sessions()); n != 1 {
		t.Fatalf("%d sessions live, want 1", n)
	}
}

// A frozen process's server hears no pings: its session expires while the
// connection is open, and the client learns it only after it thaws, after
// what was held for it.
func TestFreezePastTimeoutExpires(t *testing.T) {
	srv, clk := detServer(1)
	a, ra := start(t, srv, 4*time.Second)
	b, rb := start(t, srv, 4*time.Second)
	a.Do(&task.CreateRequest{Path: "/e", Mode: task.Ephemeral, ACL: task.OpenACL}, ra.done("create"), nil)
	srv.RunUntilIdle()
	srv.Freeze(a, 6*time.Second)
	a.Do(&task.GetDataRequest{Path: "/e"}, ra.done("sent before"), nil) // on the wire as the process froze
	srv.RunUntilIdle()
	b.Do(&task.SetDataRequest{Path: "/e", Version: -1}, rb.done("set"), nil)
	srv.RunUntilIdle()
	clk.Advance(5 * time.Second)
	srv.RunUntilIdle()
	if _, ok := srv.NodeStat("/e"); ok {
		t.Fatal("the frozen client's session did not expire")
	}
	check(t, ra.get()[1:], "create ok") // frozen: nothing delivered
	clk.Advance(time.Second)
	srv.RunUntilIdle()
	got := ra.get()[1:]
	check(t, got[:4], "create ok", "sent before ok", "event session Suspended", "event session Expired")
	if len(got) != 5 || got[4][:len("event session Connected")] != "event session Connected" {
		t.Fatalf("after the thaw: %v", got)
	}
}

// A freeze shorter than the timeout costs nothing: the same session goes
// on, with what was held delivered in order.
func TestFreezeWithinTimeoutResumes(t *testing.T) {
	srv, clk := detServer(1)
	a, ra := start(t, srv, 4*time.Second)
	srv.Freeze(a, 2*time.Second)
	srv.Drop(a, false) // reconnects only when it thaws
	clk.Advance(2 * time.Second)
	srv.RunUntilIdle()
	check(t, ra.get()[1:], "event session Suspended", "event session "+connectedText(a))
	clk.Advance(10 * time.Second)
	srv.RunUntilIdle()
	if len(srv.Sessions()) != 1 || !a.Connected() {
		t.Fatal("the session did not survive a short freeze")
	}
}

// The operator's hand: deletes at any version, creates persistent nodes
// and ephemerals of a session no client holds, firing watches as a
// client's write would.
func TestAdmin(t *testing.T) {
	srv, clk := detServer(1)
	b, rb := start(t, srv, 4*time.Second)
	b.Do(&task.CreateRequest{Path: "/n", Data: []byte("x"), ACL: task.OpenACL}, rb.done("create"), nil)
	b.Do(&task.SetDataRequest{Path: "/n", Version: -1}, rb.done("set"), nil)
	srv.RunUntilIdle()
	b.Do(&task.ExistsRequest{Path: "/n", Watch: true}, rb.done("exists"), rb.watch("watch"))
	srv.RunUntilIdle()
	if err := srv.AdminDelete("/n"); err != nil {
		t.Fatal(err)
	}
	if err := srv.AdminDelete("/n"); !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("second delete: %v", err)
	}
	orphan := srv.OrphanSession(4 * time.Second)
	if err := srv.AdminCreate("/n", []byte("op"), orphan); err != nil {
		t.Fatal(err)
	}
	srv.RunUntilIdle()
	data, st, ok := srv.NodeData("/n")
	if !ok || string(data) != "op" || st.EphemeralOwner != orphan || st.Version != 0 {
		t.Fatalf("re-created node: %q %+v", data, st)
	}
	check(t, rb.get()[1:], "create ok", "set ok", "exists ok", "watch NodeDeleted Connected")
	clk.Advance(4 * time.Second)
	if _, ok := srv.NodeStat("/n"); ok {
		t.Fatal("the orphan session's ephemeral outlived its timeout")
	}
	if err := srv.AdminCreate("/p", nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := srv.AdminCreate("/q", nil, orphan); !errors.Is(err, task.ErrSessionExpired) {
		t.Fatalf("ephemeral of an expired session: %v", err)
	}
	srv.Restart(time.Second)
	if err := srv.AdminDelete("/p"); !errors.Is(err, task.ErrNotSent) {
		t.Fatalf("delete while down: %v", err)
	}
}

package zkadapter

import (
	"context"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// connectedTo returns the index of the ensemble member c talks to.
func connectedTo(t *testing.T, c *Conn, ens *zkserver.Cluster) int {
	t.Helper()
	c.mu.Lock()
	addr := c.zc.Server()
	c.mu.Unlock()
	for i, a := range ens.Addrs() {
		if a == addr {
			return i
		}
	}
	t.Fatalf("connected to %s, not an ensemble member %v", addr, ens.Addrs())
	return -1
}

// Killing the member a client talks to: the client moves to another
// member and the session survives, with its ephemerals and watches.
func TestEnsembleMemberKilled(t *testing.T) {
	ens := zkserver.Ensemble(t, 3, serverOpts)
	c, r := open(t, Config{Servers: ens.Addrs(), SessionTimeout: 6 * time.Second})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	createEphemeral(t, c, r, "/member")
	w := r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/member", Watch: true}, w))

	victim := connectedTo(t, c, ens)
	ens.Kill(victim)
	_, si := r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	again, _ := r.waitState(t, si, task.StateConnected, 20*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x after failover, want %#x", again.SessionID, first.SessionID)
	}
	if now := connectedTo(t, c, ens); now == victim {
		t.Fatalf("still connected to the killed member %d", victim)
	}
	st := mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/member"}, nil)).Stat
	if st.EphemeralOwner != first.SessionID {
		t.Fatalf("ephemeral owner %#x", st.EphemeralOwner)
	}
	mustOK(t, do(t, c, r, &task.SetDataRequest{Path: "/member", Data: []byte("x"), Version: -1}, nil))
	if ev := w.wait(t, 10*time.Second); ev.Type != task.EventNodeDataChanged {
		t.Fatalf("watch after failover = %v", ev)
	}
}

// Losing the quorum suspends the session (no member serves); regaining it
// within the session timeout resumes the same session.
func TestQuorumLostAndRegained(t *testing.T) {
	ens := zkserver.Ensemble(t, 3, serverOpts)
	c, r := open(t, Config{Servers: ens.Addrs(), SessionTimeout: 10 * time.Second})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	createEphemeral(t, c, r, "/quorum")

	keep := connectedTo(t, c, ens)
	a, b := (keep+1)%3, (keep+2)%3
	ens.Kill(a)
	ens.Kill(b)
	_, si := r.waitState(t, 0, task.StateSuspended, 15*time.Second)
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/quorum"}, nil), task.ErrNotSent)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ens.Start(a); err != nil {
		t.Fatal(err)
	}
	if err := ens.WaitServing(ctx, a); err != nil {
		t.Fatal(err)
	}
	again, _ := r.waitState(t, si, task.StateConnected, 20*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x after quorum regained, want %#x", again.SessionID, first.SessionID)
	}
	st := mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/quorum"}, nil)).Stat
	if st.EphemeralOwner != first.SessionID {
		t.Fatalf("ephemeral owner %#x", st.EphemeralOwner)
	}
	for _, ev := range r.sessionEvents() {
		if ev.State == task.StateExpired {
			t.Fatalf("unexpected expiry: %v", r.sessionEvents())
		}
	}
}

// A quorum lost for longer than the session timeout, and regained with the
// data intact: the lone server refuses every handshake meanwhile, so the
// Conn waives its zxid once the timeout has passed, but it keeps
// presenting its session, which the ensemble still holds and resumes.
// Nothing is reported expired and the session's ephemeral is still its
// own: the Conn never gives up a session the servers keep.
func TestQuorumLostLongerThanTimeoutKeepsSession(t *testing.T) {
	ens := zkserver.Ensemble(t, 3, serverOpts)
	const timeout = 2 * time.Second
	c, r := open(t, Config{Servers: ens.Addrs(), SessionTimeout: timeout})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	createEphemeral(t, c, r, "/kept")

	keep := connectedTo(t, c, ens)
	a, b := (keep+1)%3, (keep+2)%3
	ens.Kill(a)
	ens.Kill(b)
	_, si := r.waitState(t, 0, task.StateSuspended, 15*time.Second)
	deadline := time.Now().Add(3*timeout + 5*time.Second)
	for {
		c.mu.Lock()
		waived := c.waived
		c.mu.Unlock()
		if waived {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Conn never waived its zxid while the quorum was lost")
		}
		time.Sleep(10 * time.Millisecond) // polling a flag, not ordering events
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ens.Start(a); err != nil {
		t.Fatal(err)
	}
	if err := ens.WaitServing(ctx, a); err != nil {
		t.Fatal(err)
	}
	again, _ := r.waitState(t, si, task.StateConnected, 20*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x after the quorum came back, want %#x resumed", again.SessionID, first.SessionID)
	}
	st := mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/kept"}, nil)).Stat
	if st.EphemeralOwner != first.SessionID {
		t.Fatalf("ephemeral owner %#x", st.EphemeralOwner)
	}
	for _, ev := range r.sessionEvents() {
		if ev.State == task.StateExpired {
			t.Fatalf("reported expired: %v", r.sessionEvents())
		}
	}
}

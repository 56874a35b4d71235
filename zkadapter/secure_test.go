package zkadapter

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// digestID is ZooKeeper's digest ACL id for user:password.
func digestID(user, password string) string {
	h := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

// Credentials in Config.Auth are presented on every connection before any
// request: a node with a digest ACL is readable with them and not without,
// also after the server restarts and the session resumes on a new
// connection.
func TestDigestAuth(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	cred := []task.AuthInfo{{Scheme: "digest", Auth: []byte("alice:secret")}}
	acl := []task.ACL{{Perms: task.PermAll, Scheme: "digest", ID: digestID("alice", "secret")}}
	var p partitioner
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 8 * time.Second, Auth: cred, Dialer: p.dial})
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/secret", Data: []byte("s"), Mode: task.Persistent, ACL: acl}, nil))
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/secret"}, nil))

	anon, ar := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 8 * time.Second})
	mustErr(t, do(t, anon, ar, &task.GetDataRequest{Path: "/secret"}, nil), task.ErrNoAuth)
	wrong, wr := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 8 * time.Second,
		Auth: []task.AuthInfo{{Scheme: "digest", Auth: []byte("alice:guess")}}})
	mustErr(t, do(t, wrong, wr, &task.SetDataRequest{Path: "/secret", Version: -1}, nil), task.ErrNoAuth)

	first, _ := r.waitState(t, 0, task.StateConnected, time.Second)
	srv.Stop(0)
	_, si := r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	restartHeld(t, srv, &p)
	again, _ := r.waitState(t, si, task.StateConnected, 15*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x after the restart, want %#x resumed", again.SessionID, first.SessionID)
	}
	// The first request after the reconnect is already authenticated.
	if got := mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/secret"}, nil)); string(got.Data) != "s" {
		t.Fatalf("data %q", got.Data)
	}
}

// When the server loses every byte of its data, it refuses the client
// (which has seen later zxids than the server has) at every connect. Once
// that has lasted longer than the session timeout, the Conn asks for a
// fresh session: the executor sees the old one expire and a new one begin,
// without restarting the process.
func TestRecoverAfterDataLoss(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	const timeout = 2 * time.Second
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: timeout})
	first, _ := r.waitState(t, 0, task.StateConnected, time.Second)
	for i := 0; i < 30; i++ { // zxids the wiped server will not have
		mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/n-", Mode: task.PersistentSequential, ACL: task.OpenACL}, nil))
	}
	srv.Stop(0)
	if err := srv.Wipe(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Start(0); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitServing(ctx, 0); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	_, ei := r.waitState(t, 0, task.StateExpired, 3*timeout+5*time.Second)
	next, _ := r.waitState(t, ei, task.StateConnected, 5*time.Second)
	took := time.Since(back)
	if next.SessionID == first.SessionID {
		t.Fatalf("the same session %#x after the data loss", next.SessionID)
	}
	t.Logf("new session %s after the server came back (session timeout %s)", took.Round(time.Millisecond), timeout)
	mustErr(t, do(t, c, r, &task.GetDataRequest{Path: "/n-0000000000"}, nil), task.ErrNoNode)
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/after", Mode: task.Ephemeral, ACL: task.OpenACL}, nil))
}

// A credential the server refuses (a scheme it has no provider for) fails
// Dial at once with task.CodeAuthFailed, not at the deadline, and leaves
// nothing running; the server would refuse it on every reconnect.
func TestAuthRefusedFailsDial(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second, Logger: testLogger(t),
		Auth: []task.AuthInfo{{Scheme: "no-such-scheme", Auth: []byte("x")}}})
	if err == nil {
		c.Close()
		t.Fatal("Dial succeeded with a refused credential")
	}
	if !errors.Is(err, ErrNoSession) || !errors.Is(err, task.CodeAuthFailed) {
		t.Fatalf("Dial = %v, want ErrNoSession and CodeAuthFailed", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Dial took %s", took)
	}
	t.Log(err)
}

package zkadapter

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

func createEphemeral(t *testing.T, c *Conn, r *recorder, p string) {
	t.Helper()
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: p, Mode: task.Ephemeral, ACL: task.OpenACL}, nil))
}

// Stopping the server suspends the session; restarting it within the
// session timeout resumes the same session, with its watches.
func TestResumeAfterServerRestart(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	var p partitioner
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 8 * time.Second, Dialer: p.dial})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	createEphemeral(t, c, r, "/resume")
	w := r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/resume", Watch: true}, w))

	srv.Stop(0)
	_, si := r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/resume"}, nil), task.ErrNotSent)

	restartHeld(t, srv, &p)
	again, _ := r.waitState(t, si, task.StateConnected, 15*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("resumed with session %#x, want %#x", again.SessionID, first.SessionID)
	}
	// The watch was restored on the server (go-zookeeper's SetWatches).
	mustOK(t, do(t, c, r, &task.SetDataRequest{Path: "/resume", Data: []byte("v"), Version: -1}, nil))
	if ev := w.wait(t, 10*time.Second); ev.Type != task.EventNodeDataChanged {
		t.Fatalf("restored watch = %v", ev)
	}
	w.none(t)
	for _, ev := range r.sessionEvents() {
		if ev.State == task.StateExpired {
			t.Fatalf("unexpected expiry: %v", r.sessionEvents())
		}
	}
}

// A client partitioned from the server for longer than its session
// timeout learns on reconnect that its session expired: the Conn reports
// Expired, ends its watches with NotWatching(Expired), then Connected
// with a new session.
func TestExpiryByPartition(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	var p partitioner
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: time.Second, Dialer: p.dial})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	createEphemeral(t, c, r, "/part")
	w := r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/part", Watch: true}, w))
	other, or := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})

	p.partition()
	_, si := r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	mustErr(t, do(t, c, r, &task.GetDataRequest{Path: "/part"}, nil), task.ErrNotSent)
	waitGone(t, other, or, "/part") // the server expired the session
	p.heal()

	_, ei := r.waitState(t, si, task.StateExpired, 15*time.Second)
	second, _ := r.waitState(t, ei, task.StateConnected, 15*time.Second)
	if second.SessionID == first.SessionID || second.SessionID == 0 {
		t.Fatalf("new session %#x, old %#x", second.SessionID, first.SessionID)
	}
	if ev := w.wait(t, time.Second); ev.Type != task.EventNotWatching || ev.State != task.StateExpired {
		t.Fatalf("watch at expiry = %v", ev)
	}
	checkOrder(t, r, "event session Expired", "watch NotWatching /part", fmt.Sprintf("event session Connected id=%#x", second.SessionID))
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/part", Mode: task.Ephemeral, ACL: task.OpenACL}, nil))
}

// Closing a second connection that presents the same session id and
// password ends the session at once (Curator's KillSession): the Conn
// reports Expired and then a new session.
func TestExpiryBySessionClose(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	w := r.watcher()
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/kill", Watch: true}, w), task.ErrNoNode)

	c.mu.Lock()
	id, passwd := c.hs.sessionID, c.hs.passwd
	c.mu.Unlock()
	if id != first.SessionID {
		t.Fatalf("handshake id %#x, event id %#x", id, first.SessionID)
	}
	if err := killSession(srv.Addrs()[0], id, passwd); err != nil {
		t.Fatal(err)
	}
	_, ei := r.waitState(t, 0, task.StateExpired, 15*time.Second)
	second, _ := r.waitState(t, ei, task.StateConnected, 15*time.Second)
	if second.SessionID == first.SessionID {
		t.Fatal("same session after expiry")
	}
	if ev := w.wait(t, time.Second); ev.Type != task.EventNotWatching || ev.State != task.StateExpired {
		t.Fatalf("watch at expiry = %v", ev)
	}
}

// killSession connects with the session's id and password and closes it.
func killSession(addr string, id int64, passwd []byte) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd.
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, 4000)
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd)))
	b = append(b, passwd...)
	if err := writeFrame(nc, b); err != nil {
		return err
	}
	resp, err := readFrame(nc)
	if err != nil {
		return fmt.Errorf("connect response: %w", err)
	}
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:])) != id {
		return fmt.Errorf("session %#x not re-attached: %x", id, resp)
	}
	// RequestHeader{xid 1, type closeSession (-11)}.
	b = binary.BigEndian.AppendUint32(nil, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(0xfffffff5))
	if err := writeFrame(nc, b); err != nil {
		return err
	}
	if _, err := readFrame(nc); err != nil && err != io.EOF {
		return fmt.Errorf("close response: %w", err)
	}
	return nil
}

func writeFrame(w io.Writer, b []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

// waitGone polls until path does not exist.
func waitGone(t *testing.T, c *Conn, r *recorder, path string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp := do(t, c, r, &task.ExistsRequest{Path: path}, nil); resp.Err == task.ErrNoNode {
			return
		}
		tm := time.NewTimer(50 * time.Millisecond)
		<-tm.C
	}
	t.Fatalf("%s still exists", path)
}

// checkOrder checks that the lines (prefixes of the recorder's log) were
// delivered in this order.
func checkOrder(t *testing.T, r *recorder, lines ...string) {
	t.Helper()
	r.mu.Lock()
	log := append([]string(nil), r.log...)
	r.mu.Unlock()
	at := 0
	for _, want := range lines {
		for at < len(log) && !strings.HasPrefix(log[at], want) {
			at++
		}
		if at == len(log) {
			t.Fatalf("%q not delivered after the previous lines; log:\n%s", want, strings.Join(log, "\n"))
		}
		at++
	}
}

// Requests in flight when the server is killed complete exactly once, each
// with its result or ErrConnectionLoss (or ErrNotSent if never handed to
// the client); Close after the kill leaves no goroutine (TestMain's goleak).
func TestInFlightAtServerKill(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/kill", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	w := r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/kill", Watch: true}, w))
	var chans []<-chan task.Response
	for i := range 300 {
		chans = append(chans, doAsync(c, r, &task.SetDataRequest{Path: "/kill", Data: fmt.Appendf(nil, "%d", i), Version: -1}, nil))
	}
	srv.Kill(0)
	counts := map[error]int{}
	for _, ch := range chans {
		select {
		case resp := <-ch:
			switch resp.Err {
			case nil, task.ErrConnectionLoss, task.ErrNotSent:
				counts[resp.Err]++
			default:
				t.Fatalf("unexpected error %v", resp.Err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("request not completed after the kill")
		}
	}
	t.Logf("outcomes: ok=%d connection-loss=%d not-sent=%d", counts[nil], counts[task.ErrConnectionLoss], counts[task.ErrNotSent])
	r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	start := time.Now()
	c.Close()
	t.Logf("Close with the server down took %s", time.Since(start))
	if ev := w.wait(t, time.Second); ev.Type != task.EventNotWatching || ev.State != task.StateClosed {
		// The watch may also have fired on a set that was applied.
		if ev.Type != task.EventNodeDataChanged {
			t.Fatalf("watch = %v", ev)
		}
	}
	for _, ch := range chans {
		select {
		case resp := <-ch:
			t.Fatalf("second completion: %v", resp)
		default:
		}
	}
	evs := r.sessionEvents()
	if evs[len(evs)-1].State != task.StateClosed {
		t.Fatalf("last event %v", evs[len(evs)-1])
	}
}

// Changes made while the client is cut off fire its watches when it
// reconnects to the same session: go-zookeeper re-sends them (SetWatches)
// and the server fires those whose node changed meanwhile.
func TestWatchesAcrossReconnect(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	var p partitioner
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 6 * time.Second, Dialer: p.dial})
	first, _ := r.waitState(t, 0, task.StateConnected, 10*time.Second)
	other, or := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 6 * time.Second})
	mustOK(t, do(t, other, or, &task.CreateRequest{Path: "/x", Mode: task.Persistent, ACL: task.OpenACL}, nil))

	created, changed, children, quiet := r.watcher(), r.watcher(), r.watcher(), r.watcher()
	mustErr(t, do(t, c, r, &task.ExistsRequest{Path: "/y", Watch: true}, created), task.ErrNoNode)
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/x", Watch: true}, changed))
	mustOK(t, do(t, c, r, &task.GetChildrenRequest{Path: "/x", Watch: true}, children))
	mustOK(t, do(t, c, r, &task.ExistsRequest{Path: "/", Watch: true}, quiet))

	p.partition()
	_, si := r.waitState(t, 0, task.StateSuspended, 10*time.Second)
	mustOK(t, do(t, other, or, &task.CreateRequest{Path: "/y", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	mustOK(t, do(t, other, or, &task.SetDataRequest{Path: "/x", Data: []byte("1"), Version: -1}, nil))
	mustOK(t, do(t, other, or, &task.CreateRequest{Path: "/x/c", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	p.heal()

	again, _ := r.waitState(t, si, task.StateConnected, 15*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x after reconnect, want %#x", again.SessionID, first.SessionID)
	}
	for _, tc := range []struct {
		w    *watcher
		typ  task.EventType
		path string
	}{
		{created, task.EventNodeCreated, "/y"},
		{changed, task.EventNodeDataChanged, "/x"},
		{children, task.EventNodeChildrenChanged, "/x"},
	} {
		if ev := tc.w.wait(t, 10*time.Second); ev.Type != tc.typ || ev.Path != tc.path {
			t.Fatalf("watch = %v, want %s %s", ev, tc.typ, tc.path)
		}
	}
	quiet.none(t)
	// Still live: it fires on the next change of "/".
	mustOK(t, do(t, other, or, &task.SetDataRequest{Path: "/", Data: []byte("r"), Version: -1}, nil))
	if ev := quiet.wait(t, 10*time.Second); ev.Type != task.EventNodeDataChanged || ev.Path != "/" {
		t.Fatalf("watch on / = %v", ev)
	}
}

package zkadapter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// replyCutter is a Dialer whose connections can be refused (a partition)
// and, once armed, cuts the next connection right after it has passed the
// first reply (a frame with xid > 0) to the client: everything the server
// sent after that reply is dropped, as when the connection breaks there.
type replyCutter struct {
	partitioner
	armed atomic.Bool
}

func (rc *replyCutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := rc.partitioner.dial(ctx, network, addr)
	if err != nil || !rc.armed.Swap(false) {
		return nc, err
	}
	return &cutAfterReply{Conn: nc}, nil
}

type cutAfterReply struct {
	net.Conn
	mu     sync.Mutex
	raw    []byte // read from the server, not yet split into frames
	out    []byte // whole frames to hand to the client
	frames int
	cut    bool
}

func (c *cutAfterReply) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.out) == 0 {
		if c.cut {
			c.Conn.Close()
			return 0, errors.New("cut after the first reply")
		}
		buf := make([]byte, 64<<10)
		n, err := c.Conn.Read(buf)
		c.raw = append(c.raw, buf[:n]...)
		for len(c.raw) >= 4 && !c.cut {
			l := int(binary.BigEndian.Uint32(c.raw))
			if len(c.raw) < 4+l {
				break
			}
			frame := c.raw[:4+l]
			c.raw = c.raw[4+l:]
			c.out = append(c.out, frame...)
			c.frames++
			// Frame 1 is the connect response; after it, a reply has a
			// positive xid (notifications -1, pings -2).
			if c.frames > 1 && int32(binary.BigEndian.Uint32(frame[4:])) > 0 {
				c.cut = true
			}
		}
		if err != nil && len(c.out) == 0 {
			return 0, err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// doc.go: "After a reconnect the session's watches are set again before
// any request, so a change made while the client was away is notified
// before any reply that shows it"; a watch is called "exactly once when
// it was set". Two data watches go in two SetWatches requests (the
// prelude splits at MaxPacketSize). /w2 changes while the client is away.
// The next connection breaks right after the reply to the first
// SetWatches, before the notification the second one triggers: the
// reply's zxid, which is past the change, became the session's last zxid,
// and the connection after sets the watch again relative to it. The
// server never notified the change, and a read showed it with the watch
// still waiting (split and default-config failed on the code before the
// fix; with one SetWatches, the control, the notification comes before
// the reply). Only the prelude's last reply counts its zxid now.
func TestPreludeCutAfterAFirstSetWatchesLosesNoEvent(t *testing.T) {
	t.Run("split", func(t *testing.T) { preludeCut(t, 40) })
	t.Run("control-one-setwatches", func(t *testing.T) { preludeCut(t, 0) })
	t.Run("default-config-1500-watches", preludeCutDefault)
}

// The same with the default Config: 1,500 data watches on paths of about
// 100 bytes take two SetWatches requests (split at 128 KiB); the last
// path, in the second, changes while the client is away.
func preludeCutDefault(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	direct, dr := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 10 * time.Second})
	dir := "/" + strings.Repeat("d", 80)
	mustOK(t, do(t, direct, dr, &task.CreateRequest{Path: dir, Mode: task.Persistent, ACL: task.OpenACL}, nil))
	paths := make([]string, 1500)
	var chs []<-chan task.Response
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/node-%06d", dir, i)
		chs = append(chs, doAsync(direct, dr, &task.CreateRequest{Path: paths[i], Data: []byte("old"), Mode: task.Persistent, ACL: task.OpenACL}, nil))
	}
	for _, ch := range chs {
		mustOK(t, <-ch)
	}
	var rc replyCutter
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 8 * time.Second, Dialer: rc.dial})
	first, _ := r.waitState(t, 0, task.StateConnected, time.Second)
	ws := make([]*watcher, len(paths))
	for i, p := range paths {
		ws[i] = r.watcher()
		mustOK(t, do(t, c, r, &task.GetDataRequest{Path: p, Watch: true}, ws[i]))
	}
	last := paths[len(paths)-1]
	rc.partition()
	_, si := r.waitState(t, 0, task.StateSuspended, 5*time.Second)
	mustOK(t, do(t, direct, dr, &task.SetDataRequest{Path: last, Data: []byte("new"), Version: -1}, nil))
	rc.armed.Store(true)
	rc.heal()
	_, ci := r.waitState(t, si, task.StateConnected, 5*time.Second)
	_, si = r.waitState(t, ci, task.StateSuspended, 5*time.Second)
	again, _ := r.waitState(t, si, task.StateConnected, 5*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x, want %#x resumed", again.SessionID, first.SessionID)
	}
	resp := mustOK(t, do(t, c, r, &task.GetDataRequest{Path: last}, nil))
	select {
	case ev := <-ws[len(ws)-1].ch:
		t.Logf("watch fired: %v", ev)
	case <-time.After(2 * time.Second):
		t.Errorf("a read shows the change (%q) and its watch was never notified", resp.Data)
	}
}

func preludeCut(t *testing.T, maxPacket int) {
	srv := zkserver.Standalone(t, serverOpts)
	direct, dr := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 10 * time.Second})
	for _, p := range []string{"/w1", "/w2"} {
		mustOK(t, do(t, direct, dr, &task.CreateRequest{Path: p, Data: []byte("old"), Mode: task.Persistent, ACL: task.OpenACL}, nil))
	}
	var rc replyCutter
	// 40 bytes: a SetWatches with one 3-byte path is 35, with two 42.
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 8 * time.Second, Dialer: rc.dial, MaxPacketSize: maxPacket})
	first, _ := r.waitState(t, 0, task.StateConnected, time.Second)
	w1, w2 := r.watcher(), r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/w1", Watch: true}, w1))
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/w2", Watch: true}, w2))

	rc.partition() // away
	_, si := r.waitState(t, 0, task.StateSuspended, 5*time.Second)
	mustOK(t, do(t, direct, dr, &task.SetDataRequest{Path: "/w2", Data: []byte("new"), Version: -1}, nil))
	rc.armed.Store(true) // the next connection breaks after its first reply
	rc.heal()
	_, ci := r.waitState(t, si, task.StateConnected, 5*time.Second)
	_, si = r.waitState(t, ci, task.StateSuspended, 5*time.Second)
	again, _ := r.waitState(t, si, task.StateConnected, 5*time.Second)
	if again.SessionID != first.SessionID {
		t.Fatalf("session %#x, want %#x resumed", again.SessionID, first.SessionID)
	}
	resp := mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/w2"}, nil))
	if string(resp.Data) != "new" {
		t.Fatalf("read %q", resp.Data)
	}
	select {
	case ev := <-w2.ch:
		t.Logf("watch fired: %v", ev)
	case <-time.After(2 * time.Second):
		t.Errorf("a read shows /w2's change (%q) and its watch was never notified (events %v)", resp.Data, r.sessionEvents())
	}
	w1.none(t)
}

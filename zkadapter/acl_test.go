package zkadapter

import (
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// A setACL is measured on the wire like every request: at the server's
// packet limit it is sent and answered (here NoNode, after the server has
// checked the long digest id valid), one byte over it fails unsent with
// ErrDataTooLarge. getACL and setACL travel with their own opcodes and
// records: the reply carries the list and the Stat.
func TestACLOnTheWire(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/n", ACL: task.OpenACL}, nil))
	acl := []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}, task.DigestACL(task.PermAll, "u", "p")}
	st := mustOK(t, do(t, c, r, &task.SetACLRequest{Path: "/n", ACL: acl, Version: 0}, nil)).Stat
	if st.Aversion != 1 {
		t.Fatalf("aversion %d after setACL", st.Aversion)
	}
	got := mustOK(t, do(t, c, r, &task.GetACLRequest{Path: "/n"}, nil))
	want := []task.ACL{acl[0], {Perms: task.PermAll, Scheme: "digest", ID: "u:x"}} // READ without ADMIN: redacted
	if len(got.ACL) != 2 || got.ACL[0] != want[0] || got.ACL[1] != want[1] || got.Stat != st {
		t.Fatalf("getACL = %+v %+v, want %+v %+v", got.ACL, got.Stat, want, st)
	}

	big := &task.SetACLRequest{Path: "/missing", ACL: []task.ACL{{Perms: task.PermAll, Scheme: "digest", ID: "u:"}}, Version: -1}
	big.ACL[0].ID += strings.Repeat("h", task.MaxPacketSize-packetSize(big))
	if n := packetSize(big); n != task.MaxPacketSize {
		t.Fatalf("packet of %d bytes", n)
	}
	mustErr(t, do(t, c, r, big, nil), task.ErrNoNode)
	big.ACL[0].ID += "h"
	mustErr(t, do(t, c, r, big, nil), task.ErrDataTooLarge)
	for _, ev := range r.sessionEvents() {
		if ev.State != task.StateConnected {
			t.Fatalf("session event %v: the server dropped the connection", ev)
		}
	}

	// The boundary is the server's: a Conn told the limit is one byte
	// higher sends the request, and the server drops the connection.
	c2, r2 := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second, MaxPacketSize: task.MaxPacketSize + 1})
	mustErr(t, do(t, c2, r2, big, nil), task.ErrConnectionLoss)
}

package wire_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
)

// A digest auth packet whose data is null (length -1, what
// go-zookeeper's AddAuth("digest", nil) sends) fails on a 3.8.0 server:
// DigestAuthenticationProvider.handleAuthentication makes a String of
// it and throws, which processPacket answers AuthFailed before it closes
// the connection. The ip scheme ignores the data and succeeds. The fake
// took the null digest as an empty one and added the identity.
func TestNullAuthDataAsTheRealServer(t *testing.T) {
	sameAsReal(t, func(r *rig) (lines []string) {
		for _, scheme := range []string{"digest", "ip"} {
			lines = append(lines, nullAuthLine(t, r, scheme))
		}
		return lines
	})
}

// TestNullDigestAuthFails pins the same on the fake alone.
func TestNullDigestAuthFails(t *testing.T) {
	r := start(t, fakezk.Config{TickTime: time.Second})
	if got, want := nullAuthLine(t, r, "digest"), "digest null: err -115, closed true"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func nullAuthLine(t *testing.T, r *rig, scheme string) string {
	t.Helper()
	c := r.rawConn(t)
	c.session(20 * time.Second)
	h, _, _ := c.call(wire.Request{Op: wire.OpAuth, Scheme: scheme, Auth: nil})
	if h.Err != 0 {
		c.nc.SetReadDeadline(time.Now().Add(time.Second)) // a bound: the close follows the reply
		return fmt.Sprintf("%s null: err %d, closed %v", scheme, h.Err, c.closed())
	}
	h, _, _ = c.call(wire.Request{Op: wire.OpExists, Path: "/"})
	return fmt.Sprintf("%s null: err 0, then exists err %d", scheme, h.Err)
}

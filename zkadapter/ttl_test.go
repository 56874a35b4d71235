package zkadapter

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// TestServerTTLBounds sends TTL creates that task.Validate refuses
// straight to real servers, past Validate, to pin what ZooKeeper 3.8
// itself answers (the reason Validate refuses them): with TTL nodes
// enabled, a TTL that comes to 0 ms, less, or more than 2^40-1 ms on the
// wire is BadArguments (PrepRequestProcessor.validateCreateRequest turns
// EphemeralType.validateTTL's IllegalArgumentException into it), and
// 2^40-1 ms is accepted; with them disabled, a TTL create is
// Unimplemented whatever its TTL (that check comes first).
func TestServerTTLBounds(t *testing.T) {
	for _, ext := range []bool{true, false} {
		opts := serverOpts
		opts.ExtendedTypes = ext
		srv := zkserver.Standalone(t, opts)
		c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
		r.waitState(t, 0, task.StateConnected, 10*time.Second)
		for i, tc := range []struct {
			ttl  time.Duration
			want error
		}{
			{0, task.ErrBadArguments},
			{-time.Millisecond, task.ErrBadArguments},
			{time.Millisecond / 2, task.ErrBadArguments}, // 0 ms on the wire
			{task.MaxTTL + time.Millisecond, task.ErrBadArguments},
			{task.MaxTTL, nil},
			{time.Millisecond, nil},
		} {
			req := &task.CreateRequest{Path: "/t" + string(rune('a'+i)), Mode: task.PersistentWithTTL, TTL: tc.ttl, ACL: task.OpenACL}
			if (reqcheck.Validate(req, 0) == nil) != (tc.want == nil) {
				t.Errorf("ttl %s: Validate and the server disagree", tc.ttl)
			}
			want := tc.want
			if !ext {
				want = task.ErrUnimplemented
			}
			if got := doUnvalidated(t, c, req).Err; !errors.Is(got, want) && (want != nil || got != nil) {
				t.Errorf("extended types %v, ttl %s: %v, want %v", ext, tc.ttl, got, want)
			}
		}
	}
}

// doUnvalidated sends req as Do does, but without task.Validate, and
// waits for the response.
func doUnvalidated(t *testing.T, c *Conn, req task.Request) task.Response {
	t.Helper()
	ch := make(chan task.Response, 1)
	c.mu.Lock()
	cl := &call{req: req, done: func(r task.Response) { ch <- r }, gen: c.gen, conn: c.live}
	c.link(cl)
	c.spill.put(cl)
	c.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatalf("%s %s: no completion", req.OpName(), req.NodePath())
	}
	panic("unreachable")
}

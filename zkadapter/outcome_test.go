package zkadapter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// When a connection ends, a pending request that go-zookeeper's send loop
// encoded completes with ErrConnectionLoss (it may be on the wire), one it
// never encoded with ErrNotSent, in Do order; a request refused by the
// guard later (held past its connection) is not completed twice.
func TestConnectionEndedOutcomes(t *testing.T) {
	c := &Conn{}
	c.state = task.StateSuspended
	var got []string
	mk := func(name string) *call {
		cl := &call{req: &task.SyncRequest{Path: "/" + name}, done: func(r task.Response) {
			got = append(got, fmt.Sprintf("%s %v", name, r.Err))
		}, conn: 1}
		cl.body = guarded{c: c, conn: 1, body: &pathRequest{"/" + name}, cl: cl}
		c.link(cl)
		return cl
	}
	c.wireNo.Store(1)
	a, b, d := mk("a"), mk("b"), mk("d")
	buf := make([]byte, 64)
	if _, err := a.body.Encode(buf); err != nil { // the send loop wrote a
		t.Fatal(err)
	}
	if _, err := d.body.Encode(buf); err != nil { // and d, after b was taken
		t.Fatal(err)
	}
	c.mu.Lock()
	c.connectionEnded()
	c.mu.Unlock()
	c.wireNo.Store(2)
	if _, err := b.body.Encode(buf); err != errStale { // the next connection's send loop meets b
		t.Fatalf("encode on the next connection: %v, want errStale", err)
	}
	want := []string{"a " + task.ErrConnectionLoss.Error(), "b " + task.ErrNotSent.Error(), "d " + task.ErrConnectionLoss.Error()}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
	if c.head != nil || c.tail != nil {
		t.Fatal("calls left pending")
	}
}

// End to end: creates pipelined when the server is killed are each
// reported once; after the restart, every create reported ErrNotSent is
// absent and every one reported done is there (a create reported not sent
// that the server had applied would break the one promise ErrNotSent
// makes).
func TestNotSentNeverApplied(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 8 * time.Second})
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/ns", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	const n = 2000
	chans := make([]<-chan task.Response, n)
	outcome := make([]error, n)
	counts := map[error]int{}
	collect := func(i int) {
		select {
		case resp := <-chans[i]:
			outcome[i] = resp.Err
			counts[resp.Err]++
		case <-time.After(20 * time.Second):
			t.Fatalf("create %d not completed after the kill", i)
		}
	}
	for i := range n {
		chans[i] = doAsync(c, r, &task.CreateRequest{Path: fmt.Sprintf("/ns/%04d", i), Mode: task.Persistent, ACL: task.OpenACL}, nil)
		if i == n/2 {
			// Kill the server with replies come back and many more in
			// flight or queued.
			for j := range n / 8 {
				collect(j)
			}
			srv.Kill(0)
		}
	}
	for i := n / 8; i < n; i++ {
		collect(i)
	}
	t.Logf("outcomes: ok=%d connection-loss=%d not-sent=%d", counts[nil], counts[task.ErrConnectionLoss], counts[task.ErrNotSent])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	_, at := r.waitState(t, 0, task.StateSuspended, time.Second)
	r.waitState(t, at, task.StateConnected, 20*time.Second)
	resp := do(t, c, r, &task.GetChildrenRequest{Path: "/ns"}, nil)
	mustOK(t, resp)
	exists := map[string]bool{}
	for _, name := range resp.Children {
		exists[name] = true
	}
	for i, err := range outcome {
		name := fmt.Sprintf("%04d", i)
		switch err {
		case nil:
			if !exists[name] {
				t.Errorf("create %s reported done, absent after the restart", name)
			}
		case task.ErrNotSent:
			if exists[name] {
				t.Errorf("create %s reported not sent, but the server applied it", name)
			}
		case task.ErrConnectionLoss:
		default:
			t.Errorf("create %s: unexpected %v", name, err)
		}
	}
}

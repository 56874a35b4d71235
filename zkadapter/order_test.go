package zkadapter

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// Pipelined requests are applied in Do order and completed in that order,
// and a notification is delivered where the server sent it: before the
// reply of the write that caused it, after the replies before it.
func TestDeliveryOrder(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second})
	mustOK(t, do(t, c, r, &task.CreateRequest{Path: "/o", Mode: task.Persistent, ACL: task.OpenACL}, nil))
	w := r.watcher()
	mustOK(t, do(t, c, r, &task.GetDataRequest{Path: "/o", Watch: true}, w))

	const n = 200
	var (
		mu        sync.Mutex
		delivered []string // in callback order
		all       sync.WaitGroup
	)
	for i := range n {
		var req task.Request = &task.CreateRequest{Path: "/o/n-", Mode: task.PersistentSequential, ACL: task.OpenACL}
		if i == n/2 {
			req = &task.SetDataRequest{Path: "/o", Data: []byte("x"), Version: -1}
		}
		all.Add(1)
		c.Do(req, func(resp task.Response) {
			defer all.Done()
			r.enter()
			defer r.leave("done "+req.OpName(), nil)
			mu.Lock()
			defer mu.Unlock()
			if resp.Err != nil {
				delivered = append(delivered, resp.Err.Error())
				return
			}
			delivered = append(delivered, resp.Path)
		}, nil)
	}
	all.Wait()
	mu.Lock()
	defer mu.Unlock()
	seq := 0
	for i, got := range delivered {
		want := fmt.Sprintf("/o/n-%010d", seq)
		if i == n/2 {
			want = "" // the set
		} else {
			seq++
		}
		if got != want {
			t.Fatalf("completion %d = %q, want %q (Do order)", i, got, want)
		}
	}
	var order []string
	for i := range n {
		if i == n/2 {
			order = append(order, "watch NodeDataChanged /o", "done set")
			continue
		}
		order = append(order, "done create")
	}
	checkOrder(t, r, order...)
}

package fakezk_test

import (
	"fmt"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// A server in automatic mode: every callback has run when Do returns.
func Example() {
	srv := fakezk.New(fakezk.Config{})
	c := srv.Connect(fakezk.ConnConfig{})
	c.Start(func(ev task.Event) { fmt.Println("session:", ev.State) })

	show := func(r task.Response) {
		if r.Err != nil {
			fmt.Println("error:", r.Err)
			return
		}
		fmt.Printf("ok %s version=%d\n", r.Path, r.Stat.Version)
	}
	c.Do(&task.CreateRequest{Path: "/app", Data: []byte("v1"), ACL: task.OpenACL}, show, nil)
	c.Do(&task.GetDataRequest{Path: "/app", Watch: true}, show, func(ev task.Event) {
		fmt.Println("watch:", ev.Type, ev.Path)
	})
	c.Do(&task.SetDataRequest{Path: "/app", Data: []byte("v2"), Version: 0}, show, nil)
	c.Do(&task.SetDataRequest{Path: "/app", Data: []byte("v3"), Version: 0}, show, nil)
	c.Do(&task.CreateRequest{Path: "/app/job-", ACL: task.OpenACL, Mode: task.PersistentSequential}, show, nil)
	c.Close()
	// Output:
	// session: Connected
	// ok /app version=0
	// ok  version=0
	// watch: NodeDataChanged /app
	// ok  version=1
	// error: version conflict
	// ok /app/job-0000000000 version=0
	// session: Closed
}

// Deterministic mode: nothing happens until the test steps the server, and
// the seed decides the interleaving.
func Example_deterministic() {
	clk := fakezk.NewClock(fakezk.Epoch)
	srv := fakezk.New(fakezk.Config{Seed: 42, Clock: clk, Deterministic: true})
	a := srv.Connect(fakezk.ConnConfig{Timeout: 4e9})
	a.Start(func(ev task.Event) { fmt.Println("a:", ev.State) })
	a.Do(&task.CreateRequest{Path: "/lock", ACL: task.OpenACL, Mode: task.Ephemeral}, func(r task.Response) {
		fmt.Println("a created", r.Path)
	}, nil)
	srv.RunUntilIdle()

	srv.Partition(a, 10e9, false) // cut off for 10s, longer than the 4s timeout
	srv.RunUntilIdle()
	clk.Advance(10e9)
	srv.RunUntilIdle()
	st, ok := srv.NodeStat("/lock")
	fmt.Println("lock held:", ok, st.EphemeralOwner != 0)
	// Output:
	// a: Connected
	// a created /lock
	// a: Suspended
	// a: Expired
	// a: Connected
	// lock held: false false
}

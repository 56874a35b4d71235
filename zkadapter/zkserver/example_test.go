package zkserver_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// The examples have no Output comment: go test would run them on machines
// without ZooKeeper too. TestExamples runs them where it is installed and
// checks what they print. In a test, zkserver.Standalone(t, ...) and
// zkserver.Ensemble(t, ...) replace NewStandalone and NewEnsemble: they
// skip the test when ZooKeeper is missing and close the servers when it
// ends.

// A standalone server on loopback, and a client on it: zkadapter's Conn
// under an executor, as an application runs.
func ExampleNewStandalone() {
	zk, err := zkserver.NewStandalone(zkserver.Options{})
	if err != nil {
		fmt.Println(err) // errors.Is(err, zkserver.ErrUnavailable): not installed
		return
	}
	defer zk.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	servers, _, err := zkadapter.ParseConnectString(zk.ConnectString())
	if err != nil {
		fmt.Println(err)
		return
	}
	conn, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: servers})
	if err != nil {
		fmt.Println(err)
		return
	}
	ex, err := executor.New(executor.Config{Conn: conn})
	if err != nil {
		conn.Close()
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- ex.Run(runCtx) }() // Run closes conn when it returns
	defer func() { stop(); <-ran }()

	path, err := executor.Await(ctx, ex, task.Create("/greeting", []byte("hello"), task.Persistent))
	if err != nil {
		fmt.Println(err)
		return
	}
	data, err := executor.Await(ctx, ex, task.Get(path))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %s (version %d)\n", path, data.Data, data.Stat.Version)
}

// An ensemble of three servers behind proxies. The server the client is on
// is cut off from it: the client suspends, then resumes the same session
// on another server; Heal lets connections through again.
func ExampleCluster_Partition() {
	zk, err := zkserver.NewEnsemble(3, zkserver.Options{Proxied: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer zk.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: zk.Addrs(), SessionTimeout: 2 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	events := make(chan task.Event, 16) // a handful of events: the callback never blocks
	if err := conn.Start(func(ev task.Event) { events <- ev }); err != nil {
		fmt.Println(err)
		return
	}
	session := conn.SessionID()

	on, err := zk.ServerOf(ctx, session)
	if err != nil {
		fmt.Println(err)
		return
	}
	zk.Partition(on)
	for connected := 0; connected < 2; { // the first session's Connected, then the resumed one
		select {
		case ev := <-events:
			fmt.Println(ev.State)
			if ev.State == task.StateConnected {
				connected++
				if connected == 2 {
					fmt.Println("the same session:", ev.SessionID == session)
				}
			}
		case <-ctx.Done():
			fmt.Println(ctx.Err())
			return
		}
	}
	now, err := zk.ServerOf(ctx, session)
	fmt.Println("on another server:", err == nil && now != on)
	zk.Heal(on)
}

// TestExamples runs the examples when ZooKeeper is installed (Require
// skips it otherwise, or fails it under ZK_REQUIRED=1) and checks their
// output, as go test would with an Output comment.
func TestExamples(t *testing.T) {
	for _, tc := range []struct {
		name    string
		example func()
		want    string
	}{
		{"NewStandalone", ExampleNewStandalone, "/greeting: hello (version 0)\n"},
		{"Cluster_Partition", ExampleCluster_Partition,
			"Connected\nSuspended\nConnected\nthe same session: true\non another server: true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zkserver.Require(t)
			if got := stdout(t, tc.example); got != tc.want {
				t.Fatalf("Example%s printed\n%s\nwant\n%s", tc.name, got, tc.want)
			}
		})
	}
}

// stdout runs f with os.Stdout going to a pipe and returns what it wrote.
func stdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		r.Close()
		read <- string(b)
	}()
	saved := os.Stdout
	os.Stdout = w
	defer func() {
		os.Stdout = saved
		w.Close()
	}()
	f()
	os.Stdout = saved
	w.Close()
	return <-read
}

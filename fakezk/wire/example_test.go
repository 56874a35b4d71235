package wire_test

import (
	"fmt"
	"net"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/task"
)

// A go-zookeeper client against fakezk on a loopback port.
func Example() {
	zk := fakezk.New(fakezk.Config{Clock: task.RealClock(), TickTime: 500 * time.Millisecond})
	defer zk.Close()
	srv := wire.New(zk, wire.Config{})
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)

	conn, _, err := gozk.Connect([]string{l.Addr().String()}, 2*time.Second, gozk.WithLogInfo(false), gozk.WithLogger(discard{}))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/greeting", []byte("hello"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		panic(err)
	}
	data, stat, err := conn.Get("/greeting")
	fmt.Println(string(data), stat.Version, err)
	// Output: hello 0 <nil>
}

// A fault on a go-zookeeper client's session: its link is cut for 300 ms,
// shorter than its session timeout, so the client reconnects to the same
// session and its calls go on.
func Example_fault() {
	zk := fakezk.New(fakezk.Config{TickTime: 100 * time.Millisecond}) // the wall clock
	defer zk.Close()
	srv := wire.New(zk, wire.Config{})
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)

	conn, _, err := gozk.Connect([]string{l.Addr().String()}, 2*time.Second, gozk.WithLogInfo(false), gozk.WithLogger(discard{}))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/n", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		panic(err)
	}
	before := conn.SessionID()
	zk.Partition(zk.SessionConn(before), 300*time.Millisecond, false)
	// go-zookeeper fails a call in flight when the link was cut with
	// ErrConnectionClosed, and one queued as it starts to reconnect with
	// ErrNoServer; a call made after that waits for the reconnect.
	_, _, err = conn.Get("/n")
	for i := 0; (err == gozk.ErrConnectionClosed || err == gozk.ErrNoServer) && i < 3; i++ {
		_, _, err = conn.Get("/n")
	}
	fmt.Println("same session:", conn.SessionID() == before, err)
	// Output: same session: true <nil>
}

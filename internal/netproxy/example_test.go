package netproxy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/zkflow/zkflow/internal/netproxy"
)

// A client talks to an echo server through the proxy; then the proxy
// partitions them.
func Example() {
	// An echo server, standing in for a ZooKeeper server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()

	p, err := netproxy.New(ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer p.Close()

	c, err := net.Dial("tcp", p.Addr()) // the client dials the proxy
	if err != nil {
		panic(err)
	}
	defer c.Close()
	buf := make([]byte, 5)
	c.Write([]byte("hello"))
	io.ReadFull(c, buf)
	fmt.Printf("%s\n", buf)

	p.Silence()
	c.Write([]byte("lost!"))
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err = c.Read(buf)
	fmt.Println("partitioned, read timed out:", errors.Is(err, os.ErrDeadlineExceeded))

	// Output:
	// hello
	// partitioned, read timed out: true
}

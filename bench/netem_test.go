package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every byte it reads with itself, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// The emulated network's proxy is a process of its own (this binary
// started again) that forwards to the target, in order, each direction
// delayed: a round trip takes at least twice the one-way delay. Its CPU
// is reported when it is closed.
func TestProxyProcess(t *testing.T) {
	const delay = 20 * time.Millisecond
	px, err := startProxy(context.Background(), echoServer(t), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	c, err := net.Dial("tcp", px.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	start := time.Now()
	go func() { _, _ = c.Write(msg) }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	rtt := time.Since(start)
	if !bytes.Equal(got, msg) {
		t.Fatal("the echo through the proxy differs from what was sent")
	}
	if rtt < 2*delay {
		t.Fatalf("1 MiB echoed in %v through a proxy delaying each way by %v", rtt, delay)
	}
	// A delay line, not a sleep per chunk: 1 MiB takes 32 or more chunks
	// each way, and they wait for the delay together.
	if rtt > 20*delay {
		t.Errorf("1 MiB echoed in %v: the delay of %v is paid per chunk", rtt, delay)
	}
	c.Close()
	if cpu := px.Close(); cpu <= 0 {
		t.Errorf("proxy CPU %v after forwarding 2 MiB", cpu)
	}
}

func TestProxySpec(t *testing.T) {
	if target, d, err := parseProxySpec("127.0.0.1:2181 500µs"); err != nil || target != "127.0.0.1:2181" || d != 500*time.Microsecond {
		t.Fatalf("parseProxySpec = %q, %v, %v", target, d, err)
	}
	for _, bad := range []string{"127.0.0.1:2181", " 1ms", "127.0.0.1:2181 soon", "127.0.0.1:2181 -1ms"} {
		if _, _, err := parseProxySpec(bad); err == nil {
			t.Errorf("parseProxySpec(%q) accepted", bad)
		}
	}
	// Without the variable, the binary is the harness.
	os.Unsetenv(proxyEnv)
	if ran, _ := proxyMain(nil, io.Discard, io.Discard); ran {
		t.Fatal("proxyMain ran without " + proxyEnv)
	}
}

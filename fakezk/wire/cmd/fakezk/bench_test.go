package main

import (
	gozk "github.com/go-zookeeper/zk"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// BenchmarkStartToRuok measures what a suite waits for when it starts a
// server: from exec of the command to the answer "imok" to ruok on its
// port (the port from its "binding to port" line), with a dataDir (a
// fresh one each time: its first snapshot is synced) and without.
// The process is killed after each answer.
//
//	go test -run '^$' -bench StartToRuok ./fakezk/wire/cmd/fakezk
func BenchmarkStartToRuok(b *testing.B) {
	bin := filepath.Join(binDir, "fakezk")
	for _, bc := range []struct {
		name string
		data bool
	}{{"memory", false}, {"dataDir", true}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				args := []string{"-port", "0"}
				if bc.data {
					args = append(args, "-data", b.TempDir())
				}
				p := startProc(b, nil, bin, args...)
				if got := ruok(b, p.addr); got != "imok" {
					b.Fatalf("ruok: %q", got)
				}
				p.kill()
			}
		})
	}
}

func ruok(tb testing.TB, addr string) string {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ruok")); err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// BenchmarkSetData measures one setData through go-zookeeper, reply
// awaited, against the command in memory and with a dataDir (where the
// reply waits for the log's fsync).
//
//	go test -run '^$' -bench SetData ./fakezk/wire/cmd/fakezk
func BenchmarkSetData(b *testing.B) {
	bin := filepath.Join(binDir, "fakezk")
	for _, bc := range []struct {
		name string
		data bool
	}{{"memory", false}, {"dataDir", true}} {
		b.Run(bc.name, func(b *testing.B) {
			args := []string{"-port", "0"}
			if bc.data {
				args = append(args, "-data", b.TempDir())
			}
			p := startProc(b, nil, bin, args...)
			c := dial(b, p.addr)
			if _, err := c.Create("/b", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
				b.Fatal(err)
			}
			value := make([]byte, 100)
			for b.Loop() {
				if _, err := c.Set("/b", value, -1); err != nil {
					b.Fatal(err)
				}
			}
			c.Close()
			p.kill()
		})
	}
}

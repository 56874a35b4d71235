package peers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// buildOrSkip builds peer k, skipping when it is not installed, except
// Curator under ZK_REQUIRED=1: make test installs it (.ci/install-deps)
// for the lock interop test, so its absence is a failure there.
func buildOrSkip(t *testing.T, k Kind) *Program {
	t.Helper()
	p, err := Build(k, DefaultCacheDir())
	if errors.Is(err, ErrUnavailable) && !(k == Curator && os.Getenv("ZK_REQUIRED") == "1") {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readNode reads path's data on the server with a plain client.
func readNode(t *testing.T, addr, path string) []byte {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data, _, err := c.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return data
}

// Every peer does the work it reports: 2 clients x 15 acquire+release,
// 2 x 15 increments that leave the counter at 30, 4 x 10 pipelined reads,
// 5 joins and leaves of a partitioner's member (kazoo's rebalance).
func TestPeersOnRealServer(t *testing.T) {
	zkserver.Require(t)
	cl := zkserver.Standalone(t, zkserver.Options{MaxSessionTimeout: 10 * time.Second})
	addr := cl.Addrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, k := range Kinds {
		t.Run(string(k), func(t *testing.T) {
			prog := buildOrSkip(t, k)
			for _, sc := range prog.Scenarios {
				if strings.HasSuffix(sc, "interop") {
					continue
				}
				p := Params{Server: addr, Scenario: sc, Clients: 2, Ops: 15, Path: fmt.Sprintf("/peers-%s-%s", k, sc)}
				want := int64(30)
				switch sc {
				case "pipeline", "get", "set":
					p.Clients, p.Outstanding, p.Ops, want = 1, 4, 10, 40
				case "rebalance": // one client: the member that joins and leaves
					p.Clients, p.Ops, want = 1, 5, 5
				case "discovery": // a lookup sends nothing and costs well under a µs: enough of them to take measurable CPU
					p.Ops, want = 100000, 200000
				}
				r, err := prog.Run(ctx, p, nil)
				if err != nil {
					t.Fatalf("%s: %v", sc, err)
				}
				if r.Impl != string(k) || r.Scenario != sc || r.Ops != want || r.Errors != 0 || len(r.Latency) != len(Quantiles) {
					t.Fatalf("%s: %s, want %d ops, no errors, latencies", sc, Format(r), want)
				}
				// The program's CPU over its window, within its whole
				// process's (start-up and connecting included).
				if r.CPU <= 0 || r.ProcessCPU < r.CPU {
					t.Fatalf("%s: CPU %v over the window, %v for the whole process", sc, r.CPU, r.ProcessCPU)
				}
				if sc == "cas" {
					data := readNode(t, addr, p.Path)
					var v int64
					if k == Kazoo { // kazoo's Counter keeps the value as text
						v, _ = strconv.ParseInt(string(data), 10, 64)
					} else if len(data) == 8 {
						v = int64(binary.BigEndian.Uint64(data))
					}
					if v != 30 {
						t.Fatalf("cas: counter %q after 30 increments", data)
					}
				}
			}
		})
	}
}

// The interop modes: Curator clients contend for one InterProcessMutex
// (rwinterop: InterProcessReadWriteLock, readers and writers) and mark
// each hold with an ephemeral node; every hold is counted, and none
// overlapped (the program exits with status 3 if one did).
func TestCuratorInterop(t *testing.T) {
	zkserver.Require(t)
	prog := buildOrSkip(t, Curator)
	cl := zkserver.Standalone(t, zkserver.Options{MaxSessionTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for sc, marker := range map[string]string{"interop": "/interop-marker", "rwinterop": "/rwinterop-markers"} {
		r, err := prog.Run(ctx, Params{Server: cl.Addrs()[0], Scenario: sc, Clients: 3, Ops: 20,
			Path: "/" + sc + "/lock", Marker: marker}, nil)
		if err != nil {
			t.Fatalf("%s: %v", sc, err)
		}
		if r.Holds != 60 || r.Errors != 0 {
			t.Fatalf("%s: %s, want 60 holds and no errors", sc, Format(r))
		}
	}
}

// The seminterop mode: Curator clients share 2 leases of one
// InterProcessSemaphoreV2 and count their markers while holding; every
// hold is counted, and none saw more than 2 holders (exit status 3).
func TestCuratorSemInterop(t *testing.T) {
	zkserver.Require(t)
	prog := buildOrSkip(t, Curator)
	cl := zkserver.Standalone(t, zkserver.Options{MaxSessionTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := prog.Run(ctx, Params{Server: cl.Addrs()[0], Scenario: "seminterop", Clients: 3, Ops: 20,
		Path: "/seminterop/sem", Marker: "/seminterop-markers", Leases: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Holds != 60 || r.Errors != 0 {
		t.Fatalf("%s: want 60 holds and no errors", Format(r))
	}
}

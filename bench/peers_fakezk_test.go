package main

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

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// Every peer program runs each of its scenarios against fakezk on the
// wire, a few operations per client, and does the work it reports: every
// operation counted and none failed; the counter left at the number of
// increments; the queue empty once each put has been taken; the tries
// won some of the tries. (The interop modes run against fakezk in the
// recipes' interop tests, internal/interop.) A peer that is not installed
// is skipped (failed under ZK_REQUIRED=1).
func TestPeersOnFakeZK(t *testing.T) {
	srv := interop.StartFake(t, zkserver.Options{MaxSessionTimeout: 10 * time.Second})
	addr := srv.Addrs()[0]
	c, _, err := gozk.Connect([]string{addr}, 10*time.Second, gozk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, k := range peers.Kinds {
		t.Run(string(k), func(t *testing.T) {
			prog, err := peers.Build(k, peers.DefaultCacheDir())
			if errors.Is(err, peers.ErrUnavailable) && os.Getenv("ZK_REQUIRED") != "1" {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range prog.Scenarios {
				if strings.HasSuffix(sc, "interop") {
					continue // the recipes' interop tests run these on fakezk
				}
				p := peers.Params{Server: addr, Scenario: sc, Clients: 2, Ops: 5, Path: fmt.Sprintf("/peers-%s-%s", k, sc)}
				switch sc {
				case "pipeline", "get", "set": // goroutines on one session
					p.Clients, p.Outstanding = 1, 4
				case "rebalance": // one client: the member that joins and leaves
					p.Clients = 1
				}
				r, err := prog.Run(ctx, p, nil)
				if err != nil {
					t.Fatalf("%s: %v", sc, err)
				}
				checkPeerRun(t, c, k, p, r)
			}
		})
	}
}

// checkPeerRun fails t unless r, the result of p, is the work p asked for.
func checkPeerRun(t *testing.T, c *gozk.Conn, k peers.Kind, p peers.Params, r peers.Result) {
	t.Helper()
	want := int64(p.Clients * p.Ops)
	if p.Scenario == "pipeline" || p.Scenario == "get" || p.Scenario == "set" {
		want *= int64(p.Outstanding)
	}
	if r.Impl != string(k) || r.Scenario != p.Scenario || r.Ops != want || r.Errors != 0 || len(r.Latency) != len(peers.Quantiles) {
		t.Fatalf("%s: %s, want %d ops, no errors, latencies", p.Scenario, peers.Format(r), want)
	}
	switch p.Scenario {
	case "trylock":
		if r.Holds <= 0 || r.Holds > r.Total {
			t.Fatalf("trylock: %d tries won of %d", r.Holds, r.Total)
		}
	case "cas":
		data, _, err := c.Get(p.Path)
		if err != nil {
			t.Fatalf("cas: %v", err)
		}
		var v int64
		if k == peers.Kazoo { // kazoo's Counter keeps the value as text
			v, _ = strconv.ParseInt(string(data), 10, 64)
		} else if len(data) == 8 {
			v = int64(binary.BigEndian.Uint64(data))
		}
		if v != want {
			t.Fatalf("cas: counter %q after %d increments", data, want)
		}
	case "set":
		if data, _, err := c.Get(p.Path); err != nil || string(data) != "zkbench-value-16" {
			t.Fatalf("set: %q, %v", data, err)
		}
	case "queue":
		items, _, err := c.Children(p.Path)
		if err != nil || len(items) != 0 {
			t.Fatalf("queue: %d puts taken, %v left (%v)", want, items, err)
		}
	}
}

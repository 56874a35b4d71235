package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// The -wire comparison end to end, sized to a second, with a second
// fakezk standing in for the real server (-zk): every case runs on both
// servers in each pair, alternating, measures something, and the table
// replaces the README's wire section.
func TestWireComparison(t *testing.T) {
	if _, err := peers.Build(peers.GoZK, peers.DefaultCacheDir()); err != nil {
		t.Skip(err)
	}
	stand := interop.StartFake(t, zkserver.Options{})
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# bench\n"+beginMarker("wire")+"\n"+endMarker("wire")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"bench", "-wire", "-zk", stand.Addrs()[0], "-pairs", "2", "-warmup", "0s", "-duration", "50ms",
		"-server-warmup", "0s", "-out", out, "-readme", readme, "-cache", peers.DefaultCacheDir()}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep wireReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if want := 2 * len(wireCases) * len(wireServers); len(rep.Samples) != want {
		t.Fatalf("%d samples, want %d", len(rep.Samples), want)
	}
	for i, s := range rep.Samples {
		if s.Err != "" || s.Result.Ops == 0 || s.Result.Scenario != s.Op || s.Result.Clients != 1 {
			t.Errorf("sample %d: %s %d on %s: %s, %q", i, s.Op, s.Goroutines, s.Server, peers.Format(s.Result), s.Err)
		}
		if want := wireServers[i%2]; s.Server != want || s.Pair != i/(len(rep.Samples)/2) {
			t.Errorf("sample %d ran on %s in pair %d: the servers do not alternate", i, s.Server, s.Pair)
		}
		// The stand-in is an existing server (-zk): its CPU is unknown;
		// the in-process fake's is measured.
		if (s.Server == "real") != (s.ServerCPU < 0) {
			t.Errorf("sample %d on %s: server CPU %v", i, s.Server, s.ServerCPU)
		}
	}
	md, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range wireCases {
		if !strings.Contains(string(md), fmt.Sprintf("| %s | %d | ", c.Op, c.Goroutines)) {
			t.Errorf("README section lacks the row %s %d:\n%s", c.Op, c.Goroutines, md)
		}
	}
}

package zkadapter

import (
	"context"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/difftest"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// TestDiffRandomSequences runs seeded random operation sequences on fakezk
// and on a real server (one server, one pair of sessions per side, reused
// across sequences: each sequence works under its own root) and compares
// every normalized result. See internal/difftest.
func TestDiffRandomSequences(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	const sessions = 2
	real := &difftest.Side{Name: "zookeeper"}
	for range sessions {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := Dial(ctx, Config{Servers: srv.Addrs(), SessionTimeout: 10 * time.Second})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		s, err := difftest.Start(c, 20*time.Second)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		real.Sessions = append(real.Sessions, s)
	}
	fsrv := fakezk.New(fakezk.Config{Seed: 1})
	fake := &difftest.Side{Name: "fakezk"}
	for range sessions {
		s, err := difftest.Start(fsrv.Connect(fakezk.ConnConfig{}), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fake.Sessions = append(fake.Sessions, s)
	}

	const first, count = 1, 1000
	start := time.Now()
	st, d, err := difftest.Compare(first, count, 25, fake, real)
	if err != nil {
		t.Fatalf("seeds %d..%d: %v", first, first+count-1, err)
	}
	div := 0
	if d != nil {
		div = 1
	}
	t.Logf("fakezk vs zookeeper: %d sequences (seeds %d..), %d ops compared, divergences: %d, in %s",
		st.Seqs, first, st.Ops, div, time.Since(start).Round(time.Millisecond))
	if d != nil {
		t.Fatal(d)
	}
}

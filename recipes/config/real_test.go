package config

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

var realOpts = zkserver.Options{MaxSessionTimeout: 10 * time.Second}

// On a real standalone server, a reader on one session gets the
// configuration another session writes: 50 versions of a directory,
// alternately in one multi and under the invalid marker, with a reader
// that honours the marker (never a half-applied version, versions only
// grow, the last one delivered) and a Reloader (its last run has the last
// version).
func TestRealConfigDelivered(t *testing.T) { realConfigDelivered(t, false) }

// TestRealConfigDelivered with both sessions under a chroot
// (realtest.Chroot).
func TestRealConfigDeliveredUnderRoot(t *testing.T) { realConfigDelivered(t, true) }

func realConfigDelivered(t *testing.T, underRoot bool) {
	zkserver.Require(t)
	cl := zkserver.Standalone(t, realOpts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chroot := realtest.Chroot(t, ctx, cl.Addrs(), underRoot)
	reader := realtest.Dial(t, ctx, cl.Addrs(), realtest.Options{Root: chroot}).Ex
	writer := realtest.Dial(t, ctx, cl.Addrs(), realtest.Options{Root: chroot}).Ex
	root := fmt.Sprintf("/config-real-%d", time.Now().UnixNano())
	values := func(g int) map[string][]byte {
		return map[string][]byte{"a": []byte(strconv.Itoa(g)), "b": []byte(strconv.Itoa(g)), "c": []byte(strconv.Itoa(g))}
	}
	if _, err := executor.Await(ctx, writer, task.Create(root, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Await(ctx, writer, Update(root, values(0))); err != nil {
		t.Fatal(err)
	}
	delivered := make(chan []string, 1000) // every delivery, in order
	if _, err := executor.Await(ctx, reader, WatchDir(root, DirOptions{Marker: true}, func(s Snapshot) {
		delivered <- []string{string(s.Values["a"]), string(s.Values["b"]), string(s.Values["c"])}
	})); err != nil {
		t.Fatal(err)
	}
	runs := make(chan int, 1000)
	apply := func(s Snapshot) task.Task[task.Unit] {
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			g, _ := strconv.Atoi(string(s.Values["a"]))
			runs <- g
			task.Suspend(sc, k, func(task.Cont[task.Unit]) func() { return nil })
		}
	}
	if _, err := executor.Await(ctx, reader, Reload(root, DirOptions{Marker: true}, apply)); err != nil {
		t.Fatal(err)
	}
	const last = 50
	for g := 1; g <= last; g++ {
		up := Update(root, values(g))
		if g%2 == 0 {
			up = UpdateMarked(root, values(g))
		}
		if _, err := executor.AwaitAcrossExpiry(ctx, writer, up); err != nil {
			t.Fatalf("generation %d: %v", g, err)
		}
	}
	prev, seen := -1, 0
	for prev != last {
		var gs []string
		select {
		case gs = <-delivered:
		case <-ctx.Done():
			t.Fatalf("generation %d not delivered; last %d", last, prev)
		}
		if len(slices.Compact(slices.Clone(gs))) != 1 {
			t.Fatalf("half-applied version delivered: %v", gs)
		}
		g, _ := strconv.Atoi(gs[0])
		if g < prev {
			t.Fatalf("generation %d delivered after %d", g, prev)
		}
		prev = g
		seen++
	}
	for g := -1; g != last; {
		select {
		case g = <-runs:
		case <-ctx.Done():
			t.Fatalf("no Reloader run with generation %d; last %d", last, g)
		}
	}
	t.Logf("reader saw %d of %d versions (the rest coalesced); last delivered %d", seen, last+1, prev)
}

// BenchmarkRealWriteToHandler measures the latency from a config write
// (Set submitted on one session) to the handler of a Watch on another
// session seeing the new value, on a real standalone server, one write
// at a time; it reports p50 and p99 in microseconds.
func BenchmarkRealWriteToHandler(b *testing.B) {
	zkserver.Require(b)
	cl := zkserver.Standalone(b, zkserver.Options{MaxSessionTimeout: 10 * time.Second, Throughput: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	reader := realtest.Dial(b, ctx, cl.Addrs(), realtest.Options{}).Ex
	writer := realtest.Dial(b, ctx, cl.Addrs(), realtest.Options{}).Ex
	lat, err := WriteToHandlerLatency(ctx, reader, writer, fmt.Sprintf("/config-bench-%d", time.Now().UnixNano()), 200)
	if err != nil {
		b.Fatal(err) // warm-up
	}
	path := fmt.Sprintf("/config-bench-%d", time.Now().UnixNano())
	b.ResetTimer()
	lat, err = WriteToHandlerLatency(ctx, reader, writer, path, b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(0, "ns/op")
}

package fakezk_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

var (
	seedFlag  = flag.Uint64("fakezk.seed", 0, "replay one seed of the determinism workload")
	seedCount = flag.Int("fakezk.seeds", 60, "how many seeds the determinism test runs")
)

// workload runs three clients issuing random operations with watches
// under drawn faults, stepping the scheduler and the clock, and returns the
// server's trace hash. Everything random comes from seed.
func workload(t testing.TB, seed uint64, rounds int) (string, *fakezk.Server) {
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{
		Seed: seed, Clock: clk, Deterministic: true, Trace: true, FaultRate: 0.02,
		Faults: fakezk.FaultConfig{MaxPartition: 30 * time.Second, MaxDelay: 2 * time.Second},
	})
	rng := rand.New(rand.NewPCG(seed, 99))
	var conns []*fakezk.Conn
	var log []string // what the clients saw, folded into the trace via Fault-free checks
	for i := range 3 {
		c := srv.Connect(fakezk.ConnConfig{Timeout: 6 * time.Second})
		if err := c.Start(func(ev task.Event) { log = append(log, fmt.Sprintf("c%d %v", i, ev)) }); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	paths := []string{"/a", "/a/b", "/a/c", "/d", "/d/e"}
	for range rounds {
		c := conns[rng.IntN(len(conns))]
		p := paths[rng.IntN(len(paths))]
		done := func(r task.Response) { log = append(log, fmt.Sprintf("resp %v", r.Err)) }
		watch := func(ev task.Event) { log = append(log, "watch "+ev.String()) }
		switch rng.IntN(9) {
		case 0:
			c.Do(&task.CreateRequest{Path: p, ACL: task.OpenACL, Mode: task.CreateMode(rng.IntN(4))}, done, nil)
		case 1:
			c.Do(&task.DeleteRequest{Path: p, Version: int32(rng.IntN(3)) - 1}, done, nil)
		case 2:
			c.Do(&task.SetDataRequest{Path: p, Data: []byte{byte(rng.IntN(256))}, Version: -1}, done, nil)
		case 3:
			c.Do(&task.ExistsRequest{Path: p, Watch: true}, done, watch)
		case 4:
			c.Do(&task.GetDataRequest{Path: p, Watch: true}, done, watch)
		case 5:
			c.Do(&task.GetChildrenRequest{Path: p, Watch: true}, done, watch)
		case 6:
			c.Do(&task.MultiRequest{Ops: []task.MultiOp{
				&task.CreateRequest{Path: p, ACL: task.OpenACL},
				&task.CheckRequest{Path: paths[rng.IntN(len(paths))], Version: int32(rng.IntN(2)) - 1},
			}}, done, nil)
		case 7:
			for range rng.IntN(8) {
				srv.Step()
			}
		case 8:
			clk.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
		if err := srv.CheckInvariants(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	for srv.RunUntilIdle() > 0 || clk.AdvanceToNext() {
	}
	for _, c := range conns {
		c.Close()
	}
	srv.RunUntilIdle()
	if err := srv.CheckInvariants(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return srv.TraceHash() + fmt.Sprint(len(log)), srv
}

func TestDeterminism(t *testing.T) {
	seeds := make([]uint64, 0, *seedCount)
	if *seedFlag != 0 {
		seeds = append(seeds, *seedFlag)
	} else {
		for i := range *seedCount {
			seeds = append(seeds, uint64(i+1))
		}
	}
	distinct := map[string]bool{}
	for _, seed := range seeds {
		h1, srv := workload(t, seed, 400)
		h2, _ := workload(t, seed, 400)
		if h1 != h2 {
			t.Errorf("seed %d: traces differ (replay: go test ./fakezk -run TestDeterminism -fakezk.seed=%d -v)", seed, seed)
			srv.WriteTrace(tWriter{t})
		}
		distinct[h1] = true
		if *seedFlag != 0 {
			t.Logf("seed %d: history %s, %d trace lines", seed, h1, len(srv.Trace()))
		}
	}
	if len(seeds) > 1 && len(distinct) < len(seeds)/2 {
		t.Errorf("only %d distinct histories for %d seeds", len(distinct), len(seeds))
	}
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func TestFaultsDrawnAppearInTrace(t *testing.T) {
	_, srv := workload(t, 7, 2000)
	faults := 0
	for _, l := range srv.Trace() {
		if contains(l, "(drawn)") {
			faults++
		}
	}
	if faults == 0 {
		t.Fatal("no drawn fault in 2000 rounds")
	}
	t.Logf("%d drawn faults, %d trace lines", faults, len(srv.Trace()))
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

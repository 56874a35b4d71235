package election_test

import (
	"flag"
	"testing"
)

var (
	replaySeed   = flag.Uint64("seed", 0, "replay this simulation seed (TestReplay)")
	replayMaster = flag.Bool("master", false, "TestReplay: the /master pattern")
	replayChaos  = flag.Bool("chaos", false, "TestReplay: chaos mode")
)

// TestReplay replays one seed of the simulation and prints the server's
// trace: go test ./recipes/election -run TestReplay -seed N [-master] [-chaos]
func TestReplay(t *testing.T) {
	if *replaySeed == 0 {
		t.Skip("no -seed given")
	}
	traceSim = true
	defer func() { traceSim = false }()
	res, err := simulate(*replaySeed, simMode{master: *replayMaster, chaos: *replayChaos})
	for _, l := range lastWorld.Server.Trace() {
		t.Log(l)
	}
	t.Logf("result: %+v, error: %v", res, err)
	if err != nil || res.violation != "" {
		t.Fail()
	}
}

package peers

import (
	"context"
	"testing"
	"time"
)

// burn spends d of this process's CPU time (ProcessCPU), whatever else the
// machine runs.
func burn(d time.Duration) {
	for end := ProcessCPU() + d; ProcessCPU() < end; {
	}
}

// Drive's CPU is the process's CPU over the measuring window only: each
// operation burns 2ms of CPU, so CPU per measured operation is about 2ms,
// and the warm-up's operations, which burnt as much each, are left out
// (they show in the whole call's CPU, not in Result.CPU).
func TestDriveCPUWindow(t *testing.T) {
	const per = 2 * time.Millisecond
	before := ProcessCPU()
	r, err := Drive(context.Background(), Load{Workers: 1, Warmup: 150 * time.Millisecond, Duration: 150 * time.Millisecond,
		Op: func(context.Context, int) error { burn(per); return nil }})
	whole := ProcessCPU() - before
	if err != nil {
		t.Fatal(err)
	}
	warm := r.Total - r.Ops
	if r.Ops == 0 || warm == 0 {
		t.Fatalf("ops %d, warm-up ops %d: want both", r.Ops, warm)
	}
	if got := r.CPUPerOp(); got < per*8/10 || got > per*2 {
		t.Errorf("CPU per op %v (CPU %v over %d ops), want about %v", got, r.CPU, r.Ops, per)
	}
	if left := whole - r.CPU; left < time.Duration(warm)*per*8/10 {
		t.Errorf("the window's CPU %v leaves %v of the whole %v outside it; the %d warm-up ops burnt %v",
			r.CPU, left, whole, warm, time.Duration(warm)*per)
	}
}

// Run takes the whole process's CPU from its rusage.
func TestProgramRunProcessCPU(t *testing.T) {
	p := &Program{Kind: "sh", Argv: []string{"sh", "-c",
		`i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo "ZKBENCH impl=sh scenario=lock clients=1 ops=10 secs=1 cpu=5.5"`, "sh"},
		Scenarios: []string{"lock"}}
	r, err := p.Run(context.Background(), validParams(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.ProcessCPU < 10*time.Millisecond {
		t.Errorf("ProcessCPU %v for a shell that counted to 200000", r.ProcessCPU)
	}
	if r.CPU != 5500*time.Nanosecond || r.CPUPerOp() != 550*time.Nanosecond {
		t.Errorf("cpu=5.5 parsed as %v, %v per op", r.CPU, r.CPUPerOp())
	}
}

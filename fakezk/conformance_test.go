package fakezk_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/conformance"
	"github.com/zkflow/zkflow/task"
)

// target runs the conformance cases on a fresh server per case.
type target struct {
	srv   *fakezk.Server
	clock *fakezk.Clock
	det   bool
	cfg   fakezk.Config
}

func newTarget(det bool, seed uint64) *target {
	return newTargetWith(fakezk.Config{Seed: seed, Deterministic: det, Trace: det})
}

func newTargetWith(cfg fakezk.Config) *target {
	clk := fakezk.NewClock(time.Time{})
	cfg.Clock = clk
	return &target{srv: fakezk.New(cfg), clock: clk, det: cfg.Deterministic, cfg: cfg}
}

func (t *target) NewConn(tb testing.TB, timeout time.Duration) task.Conn {
	return t.srv.Connect(fakezk.ConnConfig{Timeout: timeout})
}
func (t *target) NewAuthConn(tb testing.TB, timeout time.Duration, auth []task.AuthInfo) task.Conn {
	return t.srv.Connect(fakezk.ConnConfig{Timeout: timeout, Auth: auth})
}
func (t *target) Settle() { t.srv.RunUntilIdle() }
func (t *target) Expire(tb testing.TB, c task.Conn) {
	t.srv.Expire(c.(*fakezk.Conn))
}
func (t *target) Drop(tb testing.TB, c task.Conn, applied bool) {
	t.srv.Drop(c.(*fakezk.Conn), applied)
}
func (t *target) HoldsInFlight() bool { return t.det }
func (t *target) Partition(tb testing.TB, c task.Conn, d time.Duration) {
	t.srv.Partition(c.(*fakezk.Conn), d, false)
}
func (t *target) Advance(d time.Duration) {
	t.srv.RunUntilIdle()
	t.clock.Advance(d)
	t.srv.RunUntilIdle()
}
func (t *target) SetCounters(tb testing.TB, path string, version, cversion int32) {
	if err := t.srv.SetCounters(path, version, cversion); err != nil {
		tb.Fatalf("set counters %s: %v", path, err)
	}
}
func (t *target) Now() time.Time { return t.clock.Now() }
func (t *target) AdvanceToNext() bool {
	t.srv.RunUntilIdle()
	ok := t.clock.AdvanceToNext()
	t.srv.RunUntilIdle()
	return ok
}

// Reaping reports the server's container manager settings: the defaults
// (a minute, 10000 a minute) unless the test set them.
func (t *target) Reaping() conformance.Reaping {
	r := conformance.Reaping{
		CheckInterval: t.cfg.ContainerCheckInterval,
		MaxPerMinute:  t.cfg.ContainerMaxPerMinute,
		MaxNeverUsed:  t.cfg.ContainerMaxNeverUsed,
		TTL:           t.cfg.ExtendedTypes,
	}
	if r.CheckInterval == 0 {
		r.CheckInterval = fakezk.DefaultContainerCheckInterval
	}
	if r.MaxPerMinute == 0 {
		r.MaxPerMinute = fakezk.DefaultContainerMaxPerMinute
	}
	return r
}

func TestConformanceDeterministic(t *testing.T) {
	seed := uint64(0)
	conformance.Run(t, func(tb testing.TB) conformance.Target {
		seed++
		tg := newTarget(true, seed)
		tb.Cleanup(func() {
			if tb.Failed() {
				tb.Logf("seed %d trace:", seed)
				for _, l := range tg.srv.Trace() {
					tb.Log(l)
				}
			}
			if err := tg.srv.CheckInvariants(); err != nil {
				tb.Errorf("invariants: %v", err)
			}
		})
		return tg
	})
}

func TestConformanceAutomatic(t *testing.T) {
	conformance.Run(t, func(tb testing.TB) conformance.Target { return newTarget(false, 1) })
}

// TestConformanceReap runs the container manager and TTL cases on servers
// with TTL nodes, deterministic and automatic, with the server's default
// settings and with others (a short interval, a long pause, never-used
// containers deleted).
func TestConformanceReap(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  fakezk.Config
	}{
		{"defaults", fakezk.Config{}},
		{"short-interval", fakezk.Config{ContainerCheckInterval: 100 * time.Millisecond, ContainerMaxPerMinute: 120}},
		{"never-used", fakezk.Config{ContainerCheckInterval: time.Second, ContainerMaxNeverUsed: 5 * time.Second}},
		{"pause-over-interval", fakezk.Config{ContainerCheckInterval: 10 * time.Millisecond, ContainerMaxPerMinute: 1000}},
	} {
		for _, det := range []bool{true, false} {
			name := tc.name + "/automatic"
			if det {
				name = tc.name + "/deterministic"
			}
			t.Run(name, func(t *testing.T) {
				seed := uint64(0)
				conformance.RunCases(t, conformance.ReapCases(), func(tb testing.TB) conformance.Target {
					seed++
					cfg := tc.cfg
					cfg.Seed, cfg.Deterministic, cfg.Trace, cfg.ExtendedTypes = seed, det, det, true
					tg := newTargetWith(cfg)
					tb.Cleanup(func() {
						if tb.Failed() && det {
							for _, l := range tg.srv.Trace() {
								tb.Log(l)
							}
						}
						if err := tg.srv.CheckInvariants(); err != nil {
							tb.Errorf("invariants: %v", err)
						}
					})
					return tg
				})
			})
		}
	}
}

func TestConformanceCount(t *testing.T) {
	n := len(conformance.Cases())
	if n < 150 {
		t.Fatalf("%d conformance cases, want at least 150", n)
	}
	seen := map[string]bool{}
	for _, c := range conformance.Cases() {
		if seen[c.Name] || c.Checks == "" {
			t.Errorf("case %q duplicated or without a description", c.Name)
		}
		seen[c.Name] = true
	}
	t.Logf("%d cases", n)
}

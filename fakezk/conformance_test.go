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
}

func newTarget(det bool, seed uint64) *target {
	clk := fakezk.NewClock(time.Time{})
	return &target{srv: fakezk.New(fakezk.Config{Seed: seed, Clock: clk, Deterministic: det, Trace: det}), clock: clk, det: det}
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
func (t *target) ReapContainers(testing.TB) {} // containers go at once

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

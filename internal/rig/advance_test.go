package rig_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/rig"
)

// Advance returns only once the executor's timer callbacks it fired have
// run, however late the mock clock's goroutine for one gets to run (a
// callback slower than the mock's 1 ms pause stands for it here).
func TestAdvanceWaitsForTimerCallbacks(t *testing.T) {
	r := rig.New(t)
	clk := r.Ex.Clock()
	var ran atomic.Bool
	clk.AfterFunc(time.Second, func() {
		time.Sleep(20 * time.Millisecond) // a callback goroutine scheduled late
		ran.Store(true)
	})
	stopped := clk.AfterFunc(time.Second, func() { t.Error("a stopped timer ran") })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	later := clk.AfterFunc(2*time.Second, func() {})
	r.Advance(time.Second)
	if !ran.Load() {
		t.Fatal("Advance returned before the callback of a timer it fired had run")
	}
	if !later.Stop() {
		t.Fatal("a timer due after the Advance fired")
	}
}

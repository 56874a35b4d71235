// Package memcheck is the runtime's memory test: it runs a cycle (take a
// lock and release it, start a cache and stop it, ...) many times on one
// long-lived session and fails if what the cycles leave behind grows with
// their number. Each recipe's memory_test.go uses it.
//
// Two things are measured, after a warm-up that lets maps, pools and free
// lists reach their steady size:
//
//   - the live scopes under the session scope (task.Scope.Descendants):
//     once a cycle has ended, every scope it made must have been closed, so
//     the count is back at its baseline. This catches a leak exactly,
//     whatever its size.
//   - the live heap (runtime.MemStats.HeapAlloc after runtime.GC): it may
//     move by at most Bound between the end of the warm-up and the end of
//     the cycles. This catches what the scope count cannot see (a
//     subscriber, a timer, a map entry, a watch callback kept per cycle).
package memcheck

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"
)

// Cycles is how many cycles a memory test runs: 20,000, or 10,000 under
// the race detector, which makes every cycle about thirteen times slower.
// make test runs the memory tests without it (in make sim's step, whose
// test binaries are built anyway): they drive one executor on the test
// goroutine, so the race detector has nothing to find in them, and under
// it they cost the unit step about 220 CPU seconds on two cores.
const Cycles = cycles

// Warm is how many cycles run before the baseline is taken.
const Warm = 2000

// Bound is how much the live heap may grow over Cycles cycles: 1 MiB.
//
// Why this number: a leak of b bytes per cycle grows the heap by
// b*Cycles, so 1 MiB catches any leak of 53 bytes a cycle or more at
// 20,000 cycles, and of 105 bytes under -race (10,000 cycles): a leaked
// Scope alone is 192 bytes, a leaked subscription with its closure some
// 50 plus what the closure holds (a lock handle: over 200). What does not
// scale with the cycles stays far inside it: maps and slices that reached
// their steady size during the warm-up but are rehashed or regrown once
// more later (fakezk's node and watch tables, the executor's queues and
// subscriber list: a few KiB for the handful of nodes a cycle touches),
// and GC noise (HeapAlloc after a forced GC: a few KiB either way; the
// tests here measure between -17 and +11 KiB).
const Bound = 1 << 20

// ProfileEnv names the environment variable that, when set to a file
// name, has Check write a heap profile there once the cycles have run (to
// find what a failing test keeps; run with -memprofilerate=1 or so for
// the small objects to show).
const ProfileEnv = "MEMCHECK_PROFILE"

func writeProfile(t testing.TB, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Errorf("memcheck: %v", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Errorf("memcheck: %v", err)
	}
}

// Heap runs the garbage collector and returns the live heap in bytes.
func Heap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC() // the second cycle frees what the first one's finalizers released
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Check runs cycle Warm times, takes the baseline (scopes() and Heap()),
// runs cycle Cycles more times and fails t if the scope count is not back
// at the baseline or the heap grew by more than Bound. cycle(i) must run
// one whole cycle to its end (every flow it started has delivered its
// outcome); scopes returns the live scope count under the session scope.
// Both run on the test goroutine, which drives the executor.
func Check(t testing.TB, scopes func() int, cycle func(i int)) {
	t.Helper()
	for i := range Warm {
		cycle(i)
	}
	base := scopes()
	heap0 := Heap()
	start := time.Now()
	for i := range Cycles {
		cycle(Warm + i)
	}
	took := time.Since(start)
	n := scopes()
	heap1 := Heap()
	if path := os.Getenv(ProfileEnv); path != "" {
		writeProfile(t, path)
	}
	grew := int64(heap1) - int64(heap0)
	t.Logf("%d cycles in %v (%v a cycle): live scopes %d -> %d, heap %d -> %d bytes (%+d, %+.1f bytes a cycle)",
		Cycles, took.Round(time.Millisecond), (took / Cycles).Round(100*time.Nanosecond), base, n, heap0, heap1, grew, float64(grew)/Cycles)
	if n != base {
		t.Errorf("live scopes under the session: %d after %d cycles, %d before (%+.2f a cycle)", n, Cycles, base, float64(n-base)/Cycles)
	}
	if grew > Bound {
		t.Errorf("live heap grew by %d bytes over %d cycles (%.1f a cycle), more than the bound of %d", grew, Cycles, float64(grew)/Cycles, Bound)
	}
}

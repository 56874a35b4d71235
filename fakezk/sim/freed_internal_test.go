package sim

import (
	"runtime"
	"testing"
)

// The tally Explore judges by: executors and servers of worlds that are
// closed and dropped are freed; those something still refers to (a
// package-level variable, here kept) are counted as reachable, a crashed
// process's abandoned executor included.
func TestTallyCountsWhatStaysReachable(t *testing.T) {
	tl := new(execTally)
	tally.Store(tl)
	defer tally.Store(nil)
	var kept []*World
	for i := range 6 {
		w, err := New(Config{Seed: uint64(i + 1), Clients: 2})
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if err := w.Crash(0, false); err != nil { // a third executor, abandoned
				t.Fatal(err)
			}
		}
		w.Close()
		if i%3 == 2 {
			kept = append(kept, w)
		}
	}
	tally.Store(nil)
	// Six worlds of a server and two executors, one crash: 19 made. The
	// two kept hold 1+3 (crashed world, its abandoned executor included,
	// through its server's connection) and 1+2.
	if made := tl.made.Load(); made != 19 {
		t.Fatalf("made %d, want 19", made)
	}
	live := tl.reachable(0)
	if live < 6 || live > 7 {
		t.Fatalf("%d reachable with two worlds kept (6 or 7 objects: the abandoned executor may be freed), want them and no more", live)
	}
	runtime.KeepAlive(kept)
	kept = nil
	if live := tl.reachable(0); live != 0 {
		t.Fatalf("%d reachable once nothing is kept", live)
	}
}

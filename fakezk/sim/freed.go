package sim

import (
	"runtime"
	"sync/atomic"
	"time"
)

// A finished seed leaves nothing reachable. Explore counts the executors
// and servers its worlds make (a crashed process's abandoned executor
// included) and, once a scenario's seeds have run, collects the garbage
// and checks that no more than the last seeds' are still reachable: a
// package that
// keeps per-executor state in a package-level variable (recipes/lock's
// holders and directory watches did, until 2026-12-04) keeps every world
// of every seed alive, and the simulation slows as its heap grows.

// execTally counts the executors and servers made while it is the
// current tally and how many of them the collector has freed.
type execTally struct {
	made, freed atomic.Int64
}

// tally is Explore's current tally (nil: executors are not counted).
var tally atomic.Pointer[execTally]

// track counts p (an executor or a server) in the current tally, if any.
func track[T any](p *T) {
	t := tally.Load()
	if t == nil {
		return
	}
	t.made.Add(1)
	runtime.AddCleanup(p, func(t *execTally) { t.freed.Add(1) }, t)
}

// reachable collects the garbage until at most want of t's objects are
// reachable, or maxCollections have run, and returns how many are.
func (t *execTally) reachable(want int64) int64 {
	for i := 1; ; i++ {
		runtime.GC()
		live := t.made.Load() - t.freed.Load()
		if live <= want || i == maxCollections {
			return live
		}
		time.Sleep(time.Millisecond) // the runtime runs the cleanups on a goroutine of its own
	}
}

// maxCollections bounds the collections reachable runs.
const maxCollections = 20

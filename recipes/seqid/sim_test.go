package seqid_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// Under faults drawn from the seed (connection drops applied and not,
// partitions, delays, session expiries), clients drawing one at a time and
// from blocks never get the same ID twice, and no ID is above the node's
// value. A flow that fails with session expiry starts again on the next
// session, as Client does. The seed is in every failure message.
func TestSeededFaults(t *testing.T) {
	seeds := uint64(200)
	if testing.Short() {
		seeds = 20
	}
	var total stats
	for seed := uint64(1); seed <= seeds; seed++ {
		st := simulate(t, seed)
		if t.Failed() {
			t.Fatalf("seed %d failed (rerun with this seed)", seed)
		}
		total.expiries += st.expiries
		total.gaps += st.gaps
		total.drops += st.drops
	}
	t.Logf("%d seeds: %d connection drops, %d flows ended by session expiry and restarted, %d ids skipped",
		seeds, total.drops, total.expiries, total.gaps)
	if total.expiries == 0 || total.drops == 0 {
		t.Fatal("the drawn faults never bit: the test checks nothing")
	}
}

func simulate(t *testing.T, seed uint64) stats {
	const clients, each = 4, 15
	w := newWorld(t, seed, clients, fakezk.Config{
		FaultRate: 0.05, Trace: true,
		Faults: fakezk.FaultConfig{MaxPartition: 10 * time.Second, MaxDelay: time.Second},
	})
	got := newIDs(t, seed)
	alloc, _ := seqid.NewAllocator(path, 5)
	nexts := []task.Task[int64]{seqid.Next(path), seqid.Next(path), alloc.Next(),
		task.Task[int64](func(s *task.Scope, k task.Cont[int64]) { // a block of 3, keeping the last
			task.Run(s, seqid.Reserve(path, 3), func(b seqid.Block, err error) { k(b.Last, err) })
		})}
	left := make([]int, clients)
	ended, expiries := 0, 0
	var start func(i int)
	start = func(i int) {
		record := func(id int64) { got.add(i, id); left[i]-- }
		executor.Submit(w.Execs[i], drawLoop(nexts[i], left[i], record), func(_ int, err error) {
			switch {
			case errors.Is(err, task.ErrSessionExpired):
				expiries++
				start(i)
				return
			case err != nil:
				t.Errorf("seed %d: client %d: %v", seed, i, err)
			}
			ended++
		})
	}
	for i := range clients {
		left[i] = each
		start(i)
	}
	for n := 0; ended < clients; n++ {
		w.Drive()
		if ended == clients {
			break
		}
		if n > 100000 || !w.Clock.AdvanceToNext() {
			t.Fatalf("seed %d: stuck with %v left to draw", seed, left)
		}
	}
	if len(got.who) != clients*each {
		t.Fatalf("seed %d: %d ids, want %d", seed, len(got.who), clients*each)
	}
	v := readUnderFaults(t, w, seed)
	if got.max > v {
		t.Fatalf("seed %d: id %d above the node's value %d", seed, got.max, v)
	}
	faults := 0
	for _, line := range w.Server.Trace() {
		if strings.Contains(line, "fault drop") && strings.Contains(line, "drawn") {
			faults++
		}
	}
	return stats{expiries: expiries, drops: faults, gaps: v - int64(len(got.who))}
}

type stats struct {
	expiries int
	drops    int   // connection drops drawn (applied or not)
	gaps     int64 // IDs reserved in the node and never handed out
}

// readUnderFaults reads the node's value through client 0 while faults go
// on: connection loss is retried, and a session expiry starts again.
func readUnderFaults(t *testing.T, w *world, seed uint64) int64 {
	for range 100 {
		d, err := run(w, 0, c.Retry(task.Get(path), c.Policy{}))
		if errors.Is(err, task.ErrSessionExpired) {
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: get: %v", seed, err)
		}
		v, err := seqid.Decode(d.Data)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return v
	}
	t.Fatalf("seed %d: could not read the node", seed)
	return 0
}

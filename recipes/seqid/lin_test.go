package seqid_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// nextOut is the outcome of one Next call: the ID it returned, or unknown
// when the call failed (session expiry) and its write may have been
// applied or not.
type nextOut struct {
	id      int64
	unknown bool
}

// counterModel is the sequential specification of a sequence with gaps:
// the state is the last ID handed out, and Next returning v is legal iff
// v is above it (the state becomes v). An unknown outcome hands out
// nothing; a write it may have applied only makes a gap, which the model
// allows, so it leaves the state as it is.
var counterModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, _, output any) (bool, any) {
		st, out := state.(int64), output.(nextOut)
		if out.unknown {
			return true, st
		}
		return out.id > st, out.id
	},
	DescribeOperation: func(_, output any) string {
		if out := output.(nextOut); !out.unknown {
			return fmt.Sprintf("next() -> %d", out.id)
		}
		return "next() -> ?"
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
}

// Concurrent clients, each on its own session, call Next one after the
// other under faults drawn from the seed; the history of calls is
// linearizable against counterModel: every ID is above every ID returned
// by a call that ended before it began. Times are a logical clock ticked at
// every submission (the call) and every continuation (the return), in the
// order the deterministic world runs them. A call that fails with session
// expiry is recorded with an unknown outcome returning after everything
// (porcupine's convention for a call whose effect is unknown), and the
// client goes on with the next session.
func TestLinearizable(t *testing.T) {
	seeds := uint64(50)
	if testing.Short() {
		seeds = 10
	}
	ops, unknown := 0, 0
	for seed := uint64(1); seed <= seeds; seed++ {
		h := nextHistory(t, seed)
		for _, op := range h {
			ops++
			if op.Output.(nextOut).unknown {
				unknown++
			}
		}
		res, info := porcupine.CheckOperationsVerbose(counterModel, h, 30*time.Second)
		if res != porcupine.Ok {
			t.Errorf("seed %d: history of %d calls is %s (rerun with this seed)", seed, len(h), res)
			if res == porcupine.Illegal {
				for _, p := range info.PartialLinearizations() {
					t.Logf("seed %d: longest linearizable prefix: %d calls", seed, len(p[0]))
				}
				for _, op := range h {
					t.Logf("seed %d: client %d [%d, %d] %s", seed, op.ClientId, op.Call, op.Return,
						counterModel.DescribeOperation(nil, op.Output))
				}
			}
			t.FailNow()
		}
	}
	t.Logf("%d seeds: %d calls checked, %d with an unknown outcome", seeds, ops, unknown)
	if unknown == 0 {
		t.Error("no call ended with an unknown outcome: the faults never bit")
	}
}

// nextHistory runs the clients of one seed and returns their history.
func nextHistory(t *testing.T, seed uint64) []porcupine.Operation {
	t.Helper()
	const clients, each = 5, 12
	w := newWorld(t, seed, clients, fakezk.Config{
		FaultRate: 0.05,
		Faults:    fakezk.FaultConfig{MaxPartition: 10 * time.Second, MaxDelay: time.Second},
	})
	var (
		now     int64
		h       []porcupine.Operation
		pending []int // indexes in h of calls with an unknown outcome
		left    = make([]int, clients)
		ended   int
	)
	var call func(i int)
	call = func(i int) {
		now++
		op := porcupine.Operation{ClientId: i, Input: struct{}{}, Call: now}
		executor.Submit(w.Execs[i], seqid.Next(path), func(id int64, err error) {
			now++
			switch {
			case err == nil:
				op.Output, op.Return = nextOut{id: id}, now
				left[i]--
			case errors.Is(err, task.ErrSessionExpired):
				op.Output = nextOut{unknown: true}
				pending = append(pending, len(h))
			default:
				t.Errorf("seed %d: client %d: %v", seed, i, err)
				ended++
				return
			}
			h = append(h, op)
			if left[i] == 0 {
				ended++
				return
			}
			call(i)
		})
	}
	for i := range clients {
		left[i] = each
		call(i)
	}
	if !w.Settle(func() bool { return ended == clients }) {
		t.Fatalf("seed %d: stuck with %v left to draw", seed, left)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, j := range pending {
		h[j].Return = now + 1
	}
	return h
}

// The model catches order, not only repeats: unique IDs returned out of
// real-time order are illegal, the same IDs from overlapping calls are not,
// and an unknown outcome hands out nothing.
func TestCounterModel(t *testing.T) {
	op := func(client int, call, ret int64, out nextOut) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: struct{}{}, Call: call, Output: out, Return: ret}
	}
	for _, tc := range []struct {
		name string
		h    []porcupine.Operation
		ok   bool
	}{
		{"in order with a gap", []porcupine.Operation{op(0, 1, 2, nextOut{id: 1}), op(1, 3, 4, nextOut{id: 7})}, true},
		{"lower after higher", []porcupine.Operation{op(0, 1, 2, nextOut{id: 5}), op(1, 3, 4, nextOut{id: 3})}, false},
		{"overlapping", []porcupine.Operation{op(0, 1, 4, nextOut{id: 5}), op(1, 2, 3, nextOut{id: 3})}, true},
		{"repeat", []porcupine.Operation{op(0, 1, 4, nextOut{id: 3}), op(1, 2, 3, nextOut{id: 3})}, false},
		{"unknown then lower", []porcupine.Operation{op(0, 1, 9, nextOut{unknown: true}), op(1, 2, 3, nextOut{id: 2}), op(1, 4, 5, nextOut{id: 1})}, false},
	} {
		if got := porcupine.CheckOperations(counterModel, tc.h); got != tc.ok {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.ok)
		}
	}
}

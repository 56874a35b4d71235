package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// porcupineVerdict is what porcupine decides for s's history under
// counterModel (calls still in progress or of unknown outcome return
// after everything, unknown).
func porcupineVerdict(s *IDs) porcupine.CheckResult {
	h := s.operations()
	for i := range h {
		if h[i].Return < 0 || h[i].Output == nil {
			h[i].Output, h[i].Return = idOut{unknown: true}, s.now+1
		}
	}
	res, _ := porcupine.CheckOperationsVerbose(counterModel, h, 30*time.Second)
	return res
}

// TestLinearizableAsPorcupine: on random histories of three clients
// drawing IDs from a small range (so that repeats and inversions are
// common), with unknown outcomes and calls left in progress,
// Linearizable passes exactly the histories porcupine finds
// linearizable under counterModel.
func TestLinearizableAsPorcupine(t *testing.T) {
	legal, illegal := 0, 0
	for seed := uint64(1); seed <= 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := NewIDs()
		open := map[int]bool{}
		for range 2 + rng.IntN(12) {
			c := rng.IntN(3)
			switch {
			case !open[c]:
				s.Call(c)
				open[c] = true
			case rng.IntN(5) == 0:
				s.Unknown(c)
				open[c] = false
			default:
				_ = s.Return(c, rng.Int64N(9)) // a repeat is Add's to refuse: judged here too
				open[c] = false
			}
		}
		want := porcupineVerdict(s)
		err := s.Linearizable()
		if (err == nil) != (want == porcupine.Ok) {
			t.Fatalf("seed %d: Linearizable %v, porcupine %v, history %+v", seed, err, want, s.operations())
		}
		if err == nil {
			legal++
		} else {
			illegal++
		}
	}
	if legal < 300 || illegal < 300 {
		t.Fatalf("%d legal and %d illegal histories: too few of one kind to compare", legal, illegal)
	}
}

// Add refuses exactly the IDs handed out before, naming the client that
// did, across blocks, negative IDs and the extremes of int64; Len and
// Max follow.
func TestAddAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := NewIDs()
	model := map[int64]int{}
	var most int64
	for step := range 20000 {
		var id int64
		switch rng.IntN(4) {
		case 0:
			id = rng.Int64N(300) - 150
		case 1:
			id = math.MaxInt64 - rng.Int64N(200)
		case 2:
			id = math.MinInt64 + rng.Int64N(200)
		default:
			id = rng.Int64N(1 << 20)
		}
		c := rng.IntN(5)
		err := s.Add(c, id)
		prev, dup := model[id]
		switch {
		case dup && err == nil:
			t.Fatalf("step %d: id %d handed out again and accepted", step, id)
		case dup && !strings.Contains(err.Error(), fmt.Sprintf("clients %d and %d", prev, c)):
			t.Fatalf("step %d: %v, want clients %d and %d", step, err, prev, c)
		case !dup && err != nil:
			t.Fatalf("step %d: id %d refused the first time: %v", step, id, err)
		case !dup:
			model[id] = c
			most = max(most, id)
		}
		if s.Len() != len(model) || s.Max() != most {
			t.Fatalf("step %d: Len %d Max %d, want %d and %d", step, s.Len(), s.Max(), len(model), most)
		}
	}
}

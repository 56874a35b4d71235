package sim

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// IDs checks IDs handed out by a generator: no ID twice (at once, in Add),
// and, for a generator whose IDs grow in real-time order (a
// compare-and-set counter drawing one at a time), that the history of
// calls is linearizable (Linearizable: what porcupine decides for
// counterModel, without its search).
//
// Times are a logical clock ticked at every Call and every return, in
// the order the deterministic world runs them. Use it from the goroutine
// that drives the world.
type IDs struct {
	// who holds, for each block of idBlock IDs, the client that handed
	// out each of them plus one (0: not handed out): IDs come in runs
	// (a counter, blocks reserved at once), so one map entry serves many.
	who  map[int64]*[idBlock]int32
	n    int // IDs handed out
	max  int64
	now  int64
	hist []idCall
	open map[int]int // client -> index in hist of its call in progress
}

// idCall is one call of the history: what operations turns into
// porcupine's form (a value here: no boxed output per call).
type idCall struct {
	client    int
	call, ret int64 // ret -1: no return (yet)
	id        int64
	out       idOutcome
}

// idOutcome is what a call is known to have returned.
type idOutcome uint8

const (
	outNone    idOutcome = iota // in progress
	outID                       // returned id
	outUnknown                  // failed with its effect unknown
)

// operations is the history in porcupine's form (for counterModel):
// Output is nil for a call in progress, else an idOut.
func (s *IDs) operations() []porcupine.Operation {
	ops := make([]porcupine.Operation, len(s.hist))
	for i, c := range s.hist {
		ops[i] = porcupine.Operation{ClientId: c.client, Input: struct{}{}, Call: c.call, Return: c.ret}
		switch c.out {
		case outID:
			ops[i].Output = idOut{id: c.id}
		case outUnknown:
			ops[i].Output = idOut{unknown: true}
		}
	}
	return ops
}

// NewIDs returns an empty checker.
func NewIDs() *IDs { return &IDs{who: map[int64]*[idBlock]int32{}, open: map[int]int{}} }

const idBlock = 64

// Add records that client handed out id; it fails if id was handed out
// before.
func (s *IDs) Add(client int, id int64) error {
	key, i := id/idBlock, id%idBlock
	if i < 0 { // Go's division rounds toward zero
		key, i = key-1, i+idBlock
	}
	b := s.who[key]
	if b == nil {
		b = new([idBlock]int32)
		s.who[key] = b
	}
	if prev := b[i]; prev != 0 {
		return fmt.Errorf("id %d handed out twice (clients %d and %d)", id, prev-1, client)
	}
	b[i] = int32(client) + 1
	s.n++
	s.max = max(s.max, id)
	return nil
}

// Len is the number of distinct IDs handed out.
func (s *IDs) Len() int { return s.n }

// Max is the largest ID handed out (0 if none).
func (s *IDs) Max() int64 { return s.max }

// Call records that client starts a call for one ID. A client has at
// most one call in progress.
func (s *IDs) Call(client int) {
	s.now++
	s.open[client] = len(s.hist)
	s.hist = append(s.hist, idCall{client: client, call: s.now, ret: -1})
}

// Return records that client's call in progress returned id, and checks
// it with Add.
func (s *IDs) Return(client int, id int64) error {
	s.now++
	if i, ok := s.open[client]; ok {
		s.hist[i].out, s.hist[i].id, s.hist[i].ret = outID, id, s.now
		delete(s.open, client)
	}
	return s.Add(client, id)
}

// Unknown records that client's call in progress failed in a way that
// leaves its effect unknown (it may have taken an ID, which was never
// handed out): porcupine's convention for such a call is a return after
// everything.
func (s *IDs) Unknown(client int) {
	if i, ok := s.open[client]; ok {
		s.hist[i].out = outUnknown
		delete(s.open, client)
	}
}

// Linearizable checks the history of Call/Return/Unknown against a
// counter with gaps (counterModel): every ID is above 0 and above every
// ID returned by a call that ended before it began, and no two calls
// returned the same ID. Calls still in progress count as unknown. For
// this model that is what porcupine decides (ordering the known calls by
// their IDs gives the linearization; a call of unknown outcome hands out
// nothing and goes last), in O(n log n) where porcupine searches:
// TestLinearizableAsPorcupine compares the two on random histories.
func (s *IDs) Linearizable() error {
	type op struct{ call, ret, id int64 }
	var known []op
	for _, o := range s.hist {
		if o.out == outID && o.ret >= 0 {
			known = append(known, op{o.call, o.ret, o.id})
		}
	}
	bad := func() error { return fmt.Errorf("history of %d id calls is not linearizable", len(s.hist)) }
	byRet := slices.Clone(known)
	slices.SortFunc(byRet, func(a, b op) int { return cmp.Compare(a.ret, b.ret) })
	slices.SortFunc(known, func(a, b op) int { return cmp.Compare(a.call, b.call) })
	seen := make(map[int64]bool, len(known))
	before, j := int64(0), 0 // the largest ID of the calls that returned before the one judged
	for _, b := range known {
		for ; j < len(byRet) && byRet[j].ret < b.call; j++ {
			before = max(before, byRet[j].id)
		}
		if b.id <= before || seen[b.id] {
			return bad()
		}
		seen[b.id] = true
	}
	return nil
}

// Calls is the number of calls recorded.
func (s *IDs) Calls() int { return len(s.hist) }

// Invariant is Linearizable as an end-of-run invariant.
func (s *IDs) Invariant() Invariant {
	return InvariantFunc(func(*Trial) error { return s.Linearizable() })
}

type idOut struct {
	id      int64
	unknown bool
}

// counterModel is porcupine's sequential specification of an ID counter
// with gaps: the state is the last ID handed out, and a call returning v
// is legal iff v is above it. An unknown outcome hands out nothing.
var counterModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, _, output any) (bool, any) {
		st, out := state.(int64), output.(idOut)
		if out.unknown {
			return true, st
		}
		return out.id > st, out.id
	},
	DescribeOperation: func(_, output any) string {
		if out := output.(idOut); !out.unknown {
			return fmt.Sprintf("next() -> %d", out.id)
		}
		return "next() -> ?"
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
}

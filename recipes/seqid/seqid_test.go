package seqid_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

const path = "/seq"

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		path     string
		data     []byte // nil: no node
		want     []int64
		err      error
		wantData []byte // the node after the draws (nil: not checked)
	}{
		{name: "missing node starts at 1", path: path, want: []int64{1, 2, 3}, wantData: seqid.Encode(3)},
		{name: "java long", path: path, data: seqid.Encode(41), want: []int64{42, 43}, wantData: seqid.Encode(43)},
		{name: "trailing bytes kept", path: path, data: append(seqid.Encode(41), "meta"...),
			want: []int64{42}, wantData: append(seqid.Encode(42), "meta"...)},
		{name: "negative", path: path, data: seqid.Encode(-2), want: []int64{-1, 0, 1}},
		{name: "short data", path: path, data: []byte{0, 0, 1}, err: seqid.ErrShortData, wantData: []byte{0, 0, 1}},
		{name: "empty data", path: path, data: []byte{}, err: seqid.ErrShortData},
		{name: "last id", path: path, data: seqid.Encode(math.MaxInt64 - 1), want: []int64{math.MaxInt64}},
		{name: "overflow", path: path, data: seqid.Encode(math.MaxInt64), err: seqid.ErrOverflow,
			wantData: seqid.Encode(math.MaxInt64)},
		{name: "parent missing: created", path: "/no/parent", want: []int64{1, 2}, wantData: seqid.Encode(2)},
		{name: "invalid path", path: "no-slash", err: task.ErrInvalidPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, 1, fakezk.Config{})
			if tc.data != nil {
				w.create(tc.path, tc.data)
			}
			var got []int64
			var err error
			for range max(len(tc.want), 1) {
				var id int64
				if id, err = run(w, 0, seqid.Next(tc.path)); err != nil {
					break
				}
				got = append(got, id)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if tc.err == nil && !equal(got, tc.want) {
				t.Fatalf("ids = %v, want %v", got, tc.want)
			}
			var se *seqid.Error
			if isRecipeErr := errors.As(err, &se); isRecipeErr != (tc.err != nil && tc.err != task.ErrNoNode && tc.err != task.ErrInvalidPath) {
				t.Fatalf("err %v: *seqid.Error %v", err, isRecipeErr)
			}
			if tc.wantData != nil {
				d, err := run(w, 0, task.Get(tc.path))
				if err != nil || !bytes.Equal(d.Data, tc.wantData) {
					t.Fatalf("node = % x, %v, want % x", d.Data, err, tc.wantData)
				}
			}
		})
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReserve(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start int64
		n     int64
		want  seqid.Block
		err   error
	}{
		{name: "ten", start: 5, n: 10, want: seqid.Block{First: 6, Last: 15}},
		{name: "one", start: 0, n: 1, want: seqid.Block{First: 1, Last: 1}},
		{name: "up to the last id", start: math.MaxInt64 - 5, n: 5, want: seqid.Block{First: math.MaxInt64 - 4, Last: math.MaxInt64}},
		{name: "overflow", start: math.MaxInt64 - 5, n: 6, err: seqid.ErrOverflow},
		{name: "zero", n: 0, err: seqid.ErrBadCount},
		{name: "negative", n: -3, err: task.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, 1, fakezk.Config{})
			w.create(path, seqid.Encode(tc.start))
			b, err := run(w, 0, seqid.Reserve(path, tc.n))
			if !errors.Is(err, tc.err) || b != tc.want {
				t.Fatalf("Reserve = %+v, %v, want %+v, %v", b, err, tc.want, tc.err)
			}
			wantValue := tc.start
			if err == nil {
				wantValue = b.Last
			}
			if v := w.value(path); v != wantValue {
				t.Fatalf("node value %d, want %d", v, wantValue)
			}
		})
	}
}

// drawLoop is a flow that draws n IDs one after the other with next and
// records them for client i.
func drawLoop(next task.Task[int64], n int, record func(int64)) task.Task[int] {
	return c.Loop(0, func(k int) bool { return k < n }, func(k int) task.Task[int] {
		return c.Map(next, func(id int64) int { record(id); return k + 1 })
	})
}

// Several clients, each on its own session, draw IDs at once: their
// compare-and-sets collide (BadVersion), and every ID is still unique,
// with no gap (no fault), the node ending at the largest.
func TestContention(t *testing.T) {
	const clients, each = 4, 25
	conflicts := 0
	for seed := uint64(1); seed <= 20; seed++ {
		w := newWorld(t, seed, clients, fakezk.Config{Trace: true})
		got := newIDs(t, seed)
		last := make([]int64, clients)
		ended := 0
		for i := range clients {
			record := func(id int64) {
				if id <= last[i] {
					t.Errorf("seed %d: client %d drew %d after %d", seed, i, id, last[i])
				}
				last[i] = id
				got.add(i, id)
			}
			executor.Submit(w.Execs[i], drawLoop(seqid.Next(path), each, record), func(_ int, err error) {
				if err != nil {
					t.Errorf("seed %d: client %d: %v", seed, i, err)
				}
				ended++
			})
		}
		if !w.Settle(func() bool { return ended == clients }) {
			t.Fatalf("seed %d: flows did not end", seed)
		}
		if len(got.who) != clients*each || got.max != clients*each {
			t.Fatalf("seed %d: %d ids, max %d, want %d of each", seed, len(got.who), got.max, clients*each)
		}
		if v := w.value(path); v != got.max {
			t.Fatalf("seed %d: node %d, max id %d", seed, v, got.max)
		}
		conflicts += strings.Count(strings.Join(w.Server.Trace(), "\n"), "version conflict")
	}
	if conflicts == 0 {
		t.Fatal("no BadVersion in any seed: the test does not exercise contention")
	}
	t.Logf("%d BadVersion replies over 20 seeds", conflicts)
}

// Connection loss while the set is in flight: whether the server applied
// it or not, the round reads again. Applied, the ID it wrote is skipped (a
// gap); not applied, it is handed out. Never twice.
func TestConnectionLossOnSet(t *testing.T) {
	for _, tc := range []struct {
		applied     bool
		wantVersion int32 // the node's version just after the drop
		want        int64
	}{
		{applied: true, wantVersion: 1, want: 2},
		{applied: false, wantVersion: 0, want: 1},
	} {
		w := newWorld(t, 7, 1, fakezk.Config{})
		w.create(path, seqid.Encode(0))
		var id int64
		var err error
		done := false
		executor.Submit(w.Execs[0], seqid.Next(path), func(v int64, e error) { id, err, done = v, e, true })
		w.Execs[0].RunUntilIdle() // sends the get
		w.Server.RunUntilIdle()   // applies it, delivers the reply
		w.Execs[0].RunUntilIdle() // sends the set
		if st, _ := w.Server.NodeStat(path); st.Version != 0 {
			t.Fatalf("applied=%v: set applied before the drop", tc.applied)
		}
		w.Server.Drop(w.Conns[0], tc.applied)
		if st, _ := w.Server.NodeStat(path); st.Version != tc.wantVersion {
			t.Fatalf("applied=%v: version %d after the drop, want %d (was the set in flight?)",
				tc.applied, st.Version, tc.wantVersion)
		}
		if !w.Settle(func() bool { return done }) || err != nil || id != tc.want {
			t.Fatalf("applied=%v: id %d, err %v, done %v; want %d", tc.applied, id, err, done, tc.want)
		}
		if v := w.value(path); v != tc.want {
			t.Fatalf("applied=%v: node %d, want %d", tc.applied, v, tc.want)
		}
	}
}

// The data version wraps as a Java int: past MaxInt32 it is negative and
// still a valid expected version; -1 would mean "any", so the recipe
// refuses to write with it.
func TestVersionWrap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int32
		ok      int // draws that succeed before ErrVersionWrapped (-1: all)
	}{
		{name: "across int32 max", version: math.MaxInt32 - 1, ok: -1},
		{name: "reaches -1", version: -3, ok: 2},
		{name: "at -1", version: -1, ok: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, 1, fakezk.Config{})
			w.create(path, seqid.Encode(100))
			if err := w.Server.SetCounters(path, tc.version, 0); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				id, err := run(w, 0, seqid.Next(path))
				if tc.ok >= 0 && i >= tc.ok {
					if !errors.Is(err, seqid.ErrVersionWrapped) {
						t.Fatalf("draw %d: %d, %v, want ErrVersionWrapped", i, id, err)
					}
					continue
				}
				if err != nil || id != int64(101+i) {
					t.Fatalf("draw %d: %d, %v, want %d", i, id, err, 101+i)
				}
			}
			st, _ := w.Server.NodeStat(path)
			if tc.ok >= 0 && st.Version != -1 {
				t.Fatalf("version %d, want -1", st.Version)
			}
			if tc.ok < 0 && st.Version != math.MinInt32+2 {
				t.Fatalf("version %d, want %d", st.Version, math.MinInt32+2)
			}
			want := int64(100 + tc.ok)
			if tc.ok < 0 {
				want = 104
			}
			if v := w.value(path); v != want {
				t.Fatalf("node %d, want %d", v, want)
			}
		})
	}
}

// The node is deleted while a round's set is in flight. Whichever the
// server applies first, the draw ends with an ID: the set's (6), or, when
// the delete came first, the set fails with NoNode and the round starts
// again on a recreated node (1: deleting the node resets the sequence).
func TestNodeDeletedDuringRound(t *testing.T) {
	outcomes := map[int64]int{}
	for seed := uint64(1); seed <= 30; seed++ {
		w := newWorld(t, seed, 2, fakezk.Config{})
		w.create(path, seqid.Encode(5))
		var id int64
		var err error
		done, deleted := false, false
		executor.Submit(w.Execs[0], seqid.Next(path), func(v int64, e error) { id, err, done = v, e, true })
		w.Execs[0].RunUntilIdle() // sends the get
		w.Server.RunUntilIdle()
		w.Execs[0].RunUntilIdle() // sends the set
		executor.Submit(w.Execs[1], task.Delete(path, task.AnyVersion), func(_ task.Unit, e error) {
			if e != nil {
				t.Errorf("seed %d: delete: %v", seed, e)
			}
			deleted = true
		})
		if !w.Settle(func() bool { return done && deleted }) || err != nil {
			t.Fatalf("seed %d: id %d, err %v", seed, id, err)
		}
		if id != 6 && id != 1 {
			t.Fatalf("seed %d: id %d, want 6 or 1", seed, id)
		}
		outcomes[id]++
	}
	if outcomes[1] == 0 || outcomes[6] == 0 {
		t.Fatalf("outcomes %v: both orders should occur over 30 seeds", outcomes)
	}
}

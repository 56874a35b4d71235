package difftest_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/difftest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fakeSide(t *testing.T, name string, seed uint64) *difftest.Side {
	t.Helper()
	srv := fakezk.New(fakezk.Config{Seed: seed})
	sd := &difftest.Side{Name: name}
	for range 2 {
		s, err := difftest.Start(srv.Connect(fakezk.ConnConfig{}), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		sd.Sessions = append(sd.Sessions, s)
	}
	return sd
}

// TestDiffFakeVsFake is the sanity check of the generator and the runner:
// two fakezk servers with different seeds (children order differs) must
// agree on every op of every sequence.
func TestDiffFakeVsFake(t *testing.T) {
	a, b := fakeSide(t, "fakezk-1", 1), fakeSide(t, "fakezk-2", 2)
	const first, count = 1, 1000
	st, d, err := difftest.Compare(first, count, 25, a, b)
	if err != nil {
		t.Fatalf("seeds %d..%d: %v", first, first+count-1, err)
	}
	t.Logf("fakezk vs fakezk: %d sequences, %d ops compared, divergences: %d", st.Seqs, st.Ops, btoi(d != nil))
	if d != nil {
		t.Fatal(d)
	}
}

// TestDiffGenerateDeterministic: a seed always gives the same sequence.
func TestDiffGenerateDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		x, y := difftest.Generate(seed, 30, 2), difftest.Generate(seed, 30, 2)
		for i := range x {
			if x[i].String() != y[i].String() {
				t.Fatalf("seed %d op %d: %s vs %s", seed, i, x[i], y[i])
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

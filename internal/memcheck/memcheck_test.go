package memcheck

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that keeps what Check reports instead of
// failing the test that runs it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// Check fails a cycle that keeps twice as many bytes as Bound allows per
// cycle, or one scope a cycle, and passes a cycle that keeps nothing.
func TestCheckCatchesLeaks(t *testing.T) {
	var kept [][]byte
	perCycle := 2 * Bound / Cycles // 104 bytes at 20,000 cycles, 208 under -race
	for _, c := range []struct {
		name   string
		cycle  func(int)
		scopes func() int
		want   bool // a failure
	}{
		{"nothing kept", func(int) { _ = make([]byte, 4096) }, func() int { return 3 }, false},
		{"heap", func(int) { kept = append(kept, make([]byte, perCycle)) }, func() int { return 3 }, true},
		{"scope", func(int) {}, func() func() int { n := 0; return func() int { n += Cycles; return n } }(), true},
	} {
		kept = nil
		r := &recorder{TB: t}
		Check(r, c.scopes, c.cycle)
		if got := len(r.errs) > 0; got != c.want {
			t.Errorf("%s: failed %v (%q), want %v", c.name, got, r.errs, c.want)
		}
	}
	kept = nil
}

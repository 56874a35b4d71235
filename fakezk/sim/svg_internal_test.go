package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// -sim.svg with -sim.seed: each scenario a test checks gets its file, the
// second with its name added.
func TestSVGFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seed7.svg")
	defer func(seed uint64, svg string) { *seedFlag, *svgFlag = seed, svg }(*seedFlag, *svgFlag)
	*seedFlag, *svgFlag = 7, file
	quiet := func(name string) Scenario {
		return Scenario{Name: name, Clients: 2, Duration: time.Second, Live: func(*Trial) bool { return true }}
	}
	Check(t, quiet("first"), 1)
	Check(t, quiet("second/two+"), 1)
	Check(t, quiet("first"), 1) // the same scenario again: the same file
	for _, f := range []string{file, filepath.Join(filepath.Dir(file), "seed7-second-two-.svg")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "<svg ") || !strings.Contains(string(b), " seed 7: passed") {
			t.Errorf("%s: not the seed's picture:\n%.300s", f, b)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 2 {
		t.Errorf("%d files written, want 2", len(ents))
	}
}

func TestNamed(t *testing.T) {
	for _, tc := range []struct {
		msg, label string
		want       bool
	}{
		{"holders interleave: token 1788 (exit, seq 684) applied after token 1791", "token 1788", true},
		{"holders interleave: token 1788 (exit)", "token 178", false},
		{"token 1791", "token 1791", true},
		{"xtoken 1791", "token 1791", false},
		{"client m1 left", "m1", false}, // too short to tell
		{"member m10 gone", "m10", true},
		{"member m101 gone", "m10", false},
		{"", "lock", false},
	} {
		if got := named(tc.msg, tc.label); got != tc.want {
			t.Errorf("named(%q, %q) = %v, want %v", tc.msg, tc.label, got, tc.want)
		}
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		end  time.Duration
		step time.Duration
		at   time.Duration
		want string
	}{
		{3 * time.Second, 500 * time.Millisecond, 500 * time.Millisecond, "500ms"},
		{3 * time.Second, 500 * time.Millisecond, 1500 * time.Millisecond, "1.5s"},
		{12 * time.Second, time.Second, 12 * time.Second, "12s"},
		{20 * time.Second, 2 * time.Second, 0, "0"},
		{2 * time.Minute, 10 * time.Second, 90 * time.Second, "90s"},
		{40 * time.Millisecond, 5 * time.Millisecond, 35 * time.Millisecond, "35ms"},
	} {
		if step := tickStep(tc.end); step != tc.step {
			t.Errorf("tickStep(%s) = %s, want %s", tc.end, step, tc.step)
		}
		if got := tickLabel(tc.at, tc.step); got != tc.want {
			t.Errorf("tickLabel(%s, %s) = %q, want %q", tc.at, tc.step, got, tc.want)
		}
	}
}

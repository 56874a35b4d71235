package peers

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRankNearest(t *testing.T) {
	tests := []struct {
		q    float64
		n    int
		want int
	}{
		{0, 10, 0}, {10, 10, 0}, {11, 10, 1}, {50, 10, 4}, {99, 10, 9}, {100, 10, 9},
		{50, 1, 0}, {99.9, 1000, 998}, {99.9, 1001, 999}, {100, 1001, 1000},
	}
	for _, tt := range tests {
		if got := Rank(tt.q, tt.n); got != tt.want {
			t.Errorf("Rank(%v, %d) = %d, want %d", tt.q, tt.n, got, tt.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	if Summarize(nil) != nil {
		t.Fatal("no samples must give no quantiles")
	}
	// 1..100 µs, shuffled: nearest-rank quantiles are the values themselves.
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration((i*37)%100+1)*time.Microsecond)
	}
	got := Summarize(lat)
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	want := []time.Duration{us(1), us(10), us(25), us(50), us(75), us(90), us(99), us(100), us(100)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Summarize = %v, want %v", got, want)
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	r := Result{Impl: "ours", Scenario: "lock", Clients: 16, Ops: 12345, Errors: 2, Seconds: 3.25, Total: 15000, Holds: 7, CPU: 1234500 * time.Nanosecond,
		Latency: []time.Duration{1500, 2 * time.Microsecond, 3 * time.Microsecond, 40 * time.Microsecond,
			50 * time.Microsecond, 600 * time.Microsecond, 7 * time.Millisecond, 80 * time.Millisecond, time.Second}}
	line := Format(r)
	if !strings.HasPrefix(line, "ZKBENCH ") || !strings.Contains(line, " p999=80000.0") || !strings.Contains(line, " min=1.5") || !strings.Contains(line, " cpu=1234.5") {
		t.Fatalf("Format = %q", line)
	}
	got, err := ParseResult(line)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
	}
	if tp := got.Throughput(); tp < 3798 || tp > 3799 {
		t.Fatalf("Throughput = %v, want 12345/3.25", tp)
	}
	if got.Quantile(99) != 7*time.Millisecond || got.Quantile(42) != 0 {
		t.Fatalf("Quantile(99) = %v, Quantile(42) = %v", got.Quantile(99), got.Quantile(42))
	}
}

// The lines the Java and Python programs print, as they print them.
func TestParsePeerLines(t *testing.T) {
	for _, line := range []string{
		"ZKBENCH impl=curator scenario=lock clients=4 ops=243 errors=0 secs=1.013192 total=299 min=6806.2 p10=8842.9 p25=12166.4 p50=15255.4 p75=20536.5 p90=24867.6 p99=37664.9 p999=41543.5 max=41543.5",
		"ZKBENCH impl=kazoo scenario=cas clients=1 ops=0 errors=3 secs=0.500000 total=0",
		"ZKBENCH impl=curator scenario=interop clients=2 ops=40 errors=0 secs=0.9 total=40 holds=40 min=1.0 p10=1.0 p25=1.0 p50=1.0 p75=1.0 p90=1.0 p99=1.0 p999=1.0 max=1.0",
	} {
		r, err := ParseResult(line)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if r.Ops > 0 && len(r.Latency) != len(Quantiles) {
			t.Errorf("%q: latency %v", line, r.Latency)
		}
	}
}

func TestParseRejects(t *testing.T) {
	base := "ZKBENCH impl=x scenario=lock clients=1 ops=1 secs=1"
	for _, line := range []string{
		"",
		"RESULT impl=x scenario=lock clients=1 ops=1 secs=1",
		"ZKBENCH scenario=lock clients=1 ops=1 secs=1",  // no impl
		"ZKBENCH impl=x scenario=lock clients=1 secs=1", // no ops
		base + " color=blue",                            // unknown key
		base + " p50",                                   // not key=value
		base + " p50=",                                  // empty value
		base + " ops=2",                                 // twice
		"ZKBENCH impl=x scenario=lock clients=-1 ops=1 secs=1",
		"ZKBENCH impl=x scenario=lock clients=1 ops=1 secs=NaN",
		"ZKBENCH impl=x scenario=lock clients=one ops=1 secs=1",
		base + " p50=12.5", // one quantile of nine
		base + " min=1 p10=1 p25=1 p50=-1 p75=1 p90=1 p99=1 p999=1 max=1",
		base + " cpu=-3",  // negative CPU
		base + " cpu=Inf", // not a CPU time
	} {
		if _, err := ParseResult(line); !errors.Is(err, ErrBadResult) {
			t.Errorf("ParseResult(%q) = %v, want ErrBadResult", line, err)
		}
	}
}

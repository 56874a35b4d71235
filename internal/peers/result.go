package peers

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every result line a peer program prints on stdout.
const Prefix = "ZKBENCH"

// Quantiles are the latency quantiles every program reports, in percent,
// under the keys QuantileKey gives ("p50", "p999", "max" for 100 ...).
var Quantiles = []float64{0, 10, 25, 50, 75, 90, 99, 99.9, 100}

// QuantileKey is the result-line key of quantile q (a member of Quantiles).
func QuantileKey(q float64) string {
	switch q {
	case 0:
		return "min"
	case 100:
		return "max"
	}
	return "p" + strings.ReplaceAll(strconv.FormatFloat(q, 'f', -1, 64), ".", "")
}

// ErrBadResult is wrapped by every error ParseResult returns.
var ErrBadResult = errors.New("peers: bad result line")

// Result is what one run of one scenario measured: Ops operations (lock
// acquire+release, IDs, reads) in Seconds of measuring, with Latency[i]
// the Quantiles[i] quantile of one operation's latency. Holds counts the
// critical sections of the interop mode, and the tries won (out of Total)
// in the trylock scenario.
type Result struct {
	Impl     string // "ours", "curator", "kazoo", "gozk"
	Scenario string // "lock", "cas", "pipeline", "interop", ...
	Clients  int
	Ops      int64
	Errors   int64
	Seconds  float64
	Latency  []time.Duration // one per Quantiles entry; nil when no op ended
	Holds    int64
	// Total counts every operation that ended without error, the
	// warm-up's included (for requests per operation counted on the
	// server over the whole run).
	Total int64
	// CPU is the CPU time (user and system, every thread) the client's
	// process used during the measuring window (Seconds), read from the
	// process's own counters at the end of the warm-up and when the last
	// worker stopped (key cpu, in microseconds; 0: not reported). Start-up
	// and warm-up are left out.
	CPU time.Duration
	// ProcessCPU is the whole process's CPU time, start-up and warm-up
	// included, from its rusage once it exited (Program.Run sets it; it is
	// not on the result line): an upper bound that checks CPU.
	ProcessCPU time.Duration
}

// CPUPerOp is CPU per measured operation (0 when either is unknown).
func (r Result) CPUPerOp() time.Duration {
	if r.Ops <= 0 || r.CPU <= 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Ops)
}

// Throughput is Ops per second (0 when nothing was measured).
func (r Result) Throughput() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Seconds
}

// Quantile returns the latency at quantile q (a member of Quantiles), 0
// when unknown.
func (r Result) Quantile(q float64) time.Duration {
	i := slices.Index(Quantiles, q)
	if i < 0 || i >= len(r.Latency) {
		return 0
	}
	return r.Latency[i]
}

// Summarize sorts lat in place and returns its Quantiles (nearest rank:
// the smallest sample with at least q% of the samples at or below it),
// nil for no samples. The Java and Python programs compute the same.
func Summarize(lat []time.Duration) []time.Duration {
	if len(lat) == 0 {
		return nil
	}
	slices.Sort(lat)
	out := make([]time.Duration, len(Quantiles))
	for i, q := range Quantiles {
		out[i] = lat[Rank(q, len(lat))]
	}
	return out
}

// Rank is the index, in n sorted samples, of the nearest-rank quantile q
// (percent): ceil(q*n/100)-1, clamped to [0, n-1]. A hair (1e-9) is taken
// off before rounding up, so that floating-point error in q*n/100 (99.9%
// of 1000) does not push the rank one up; the Java and Python programs do
// the same.
func Rank(q float64, n int) int {
	r := int(math.Ceil(q*float64(n)/100-1e-9)) - 1
	return min(max(r, 0), n-1)
}

// Format returns r as a result line: Prefix followed by key=value fields,
// latencies in microseconds.
func Format(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s impl=%s scenario=%s clients=%d ops=%d errors=%d secs=%.6f",
		Prefix, r.Impl, r.Scenario, r.Clients, r.Ops, r.Errors, r.Seconds)
	if r.Total != 0 {
		fmt.Fprintf(&b, " total=%d", r.Total)
	}
	if r.Holds != 0 {
		fmt.Fprintf(&b, " holds=%d", r.Holds)
	}
	if r.CPU != 0 {
		fmt.Fprintf(&b, " cpu=%.1f", float64(r.CPU)/float64(time.Microsecond))
	}
	for i, q := range Quantiles {
		if i < len(r.Latency) {
			fmt.Fprintf(&b, " %s=%.1f", QuantileKey(q), float64(r.Latency[i])/float64(time.Microsecond))
		}
	}
	return b.String()
}

// ParseResult parses a result line as Format writes it (and as the Java and
// Python programs print it). Unknown keys are refused, so a program that
// drifts from the format is caught. The error wraps ErrBadResult.
func ParseResult(line string) (Result, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != Prefix {
		return Result{}, fmt.Errorf("%w: no %s prefix: %q", ErrBadResult, Prefix, line)
	}
	var r Result
	lat := make([]time.Duration, len(Quantiles))
	nlat := 0
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" {
			return Result{}, fmt.Errorf("%w: field %q is not key=value", ErrBadResult, f)
		}
		if seen[k] {
			return Result{}, fmt.Errorf("%w: key %q twice", ErrBadResult, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "impl":
			r.Impl = v
		case "scenario":
			r.Scenario = v
		case "clients":
			r.Clients, err = strconv.Atoi(v)
		case "ops":
			r.Ops, err = strconv.ParseInt(v, 10, 64)
		case "errors":
			r.Errors, err = strconv.ParseInt(v, 10, 64)
		case "total":
			r.Total, err = strconv.ParseInt(v, 10, 64)
		case "holds":
			r.Holds, err = strconv.ParseInt(v, 10, 64)
		case "secs":
			r.Seconds, err = strconv.ParseFloat(v, 64)
		case "cpu":
			var us float64
			us, err = strconv.ParseFloat(v, 64)
			if err == nil && (us < 0 || math.IsNaN(us) || math.IsInf(us, 0)) {
				err = errors.New("not a CPU time")
			}
			r.CPU = time.Duration(us * float64(time.Microsecond))
		default:
			i := slices.IndexFunc(Quantiles, func(q float64) bool { return QuantileKey(q) == k })
			if i < 0 {
				return Result{}, fmt.Errorf("%w: unknown key %q", ErrBadResult, k)
			}
			var us float64
			us, err = strconv.ParseFloat(v, 64)
			if err == nil && (us < 0 || math.IsNaN(us) || math.IsInf(us, 0)) {
				err = errors.New("not a latency")
			}
			lat[i] = time.Duration(us * float64(time.Microsecond))
			nlat++
		}
		if err != nil {
			return Result{}, fmt.Errorf("%w: %s=%q: %v", ErrBadResult, k, v, err)
		}
	}
	for _, k := range []string{"impl", "scenario", "clients", "ops", "secs"} {
		if !seen[k] {
			return Result{}, fmt.Errorf("%w: %q missing: %q", ErrBadResult, k, line)
		}
	}
	if r.Clients < 0 || r.Ops < 0 || r.Total < 0 || r.Holds < 0 || r.Errors < 0 || r.Seconds < 0 || math.IsNaN(r.Seconds) {
		return Result{}, fmt.Errorf("%w: negative count: %q", ErrBadResult, line)
	}
	switch nlat {
	case 0:
	case len(Quantiles):
		r.Latency = lat
	default:
		return Result{}, fmt.Errorf("%w: %d of %d latency quantiles: %q", ErrBadResult, nlat, len(Quantiles), line)
	}
	return r, nil
}

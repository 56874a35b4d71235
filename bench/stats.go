package main

import (
	"math"
	"slices"
)

// spread is the minimum, median and maximum of some figures.
type spread struct {
	Min, Median, Max float64
	N                int
}

// spreadOf returns the spread of xs, ignoring NaNs; N is 0 (and the rest
// NaN) when nothing is left. The median of an even count is the mean of
// the two middle values.
func spreadOf(xs []float64) spread {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return spread{Min: math.NaN(), Median: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return spread{Min: v[0], Median: med, Max: v[n-1], N: n}
}

// ratios pairs ours[i] with peer[i] (the runs of pair i) and returns
// ours/peer for each pair where both ran and the peer measured more than
// zero; a pair missing on either side (NaN) is left out.
func ratios(ours, peer []float64) []float64 {
	var out []float64
	for i := range min(len(ours), len(peer)) {
		if math.IsNaN(ours[i]) || math.IsNaN(peer[i]) || peer[i] <= 0 {
			continue
		}
		out = append(out, ours[i]/peer[i])
	}
	return out
}

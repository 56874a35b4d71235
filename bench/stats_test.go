package main

import (
	"math"
	"testing"
)

func TestSpreadOf(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		in   []float64
		want spread
	}{
		{[]float64{3, 1, 2}, spread{1, 2, 3, 3}},
		{[]float64{4, 1, 3, 2}, spread{1, 2.5, 4, 4}},
		{[]float64{nan, 5, nan}, spread{5, 5, 5, 1}},
	}
	for _, tt := range tests {
		if got := spreadOf(tt.in); got != tt.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	if s := spreadOf([]float64{nan}); s.N != 0 || !math.IsNaN(s.Median) {
		t.Errorf("spreadOf(NaN) = %+v, want N 0 and NaN", s)
	}
}

// Ratios pair the runs of the same pair; a pair missing on either side, or
// a peer that measured nothing, gives no ratio rather than a wrong one.
func TestRatios(t *testing.T) {
	nan := math.NaN()
	got := ratios([]float64{10, 20, nan, 40, 50}, []float64{5, 40, 1, nan, 0})
	want := []float64{2, 0.5}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("ratios = %v, want %v", got, want)
	}
	if got := ratios([]float64{1, 2, 3}, []float64{1}); len(got) != 1 || got[0] != 1 {
		t.Fatalf("uneven lengths: %v", got)
	}
}

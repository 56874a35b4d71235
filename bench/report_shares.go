package main

import "math"

// shares writes, for the scenarios that count a share (scenario.Share),
// Result.Holds over Result.Total per implementation, median over the
// pairs.
func (r *report) shares(w func(string, ...any)) {
	head := false
	for _, s := range r.scenarios {
		if s.Share == "" {
			continue
		}
		if !head {
			w("### Shares\n\nThe share of a scenario's operations that counted (trylock: tries that won the lock), over every operation of the run (warm-up included), median over the pairs.\n\n")
			w("| scenario | clients | network | impl | share | what |\n|---|---:|---|---|---:|---|\n")
			head = true
		}
		for _, n := range s.Clients {
			for _, net := range r.nets(s) {
				for _, impl := range r.impls(s) {
					sh := spreadOf(r.perPair(s.Name, n, impl, net.Name, share))
					if sh.N == 0 {
						continue
					}
					w("| %s | %d | %s | %s | %.1f%% | %s |\n", s.Name, n, net.Label(), impl, 100*sh.Median, s.Share)
				}
			}
		}
	}
	if head {
		w("\n")
	}
}

// share is Holds over Total (NaN when nothing ended).
func share(x sample) float64 {
	if x.Result.Total <= 0 {
		return math.NaN()
	}
	return float64(x.Result.Holds) / float64(x.Result.Total)
}

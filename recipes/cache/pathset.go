package cache

// pathSet is a set of paths taken smallest first (paths are handled in
// order, so a seed replays the same history): a map for membership and a
// binary min-heap of the paths added. A path deleted since it was added
// stays in the heap until it comes up, and is then skipped; so adding,
// deleting and taking the smallest cost O(log n), where scanning every
// path for the smallest made a cache's start on n nodes O(n²).
// Executor goroutine only.
type pathSet struct {
	in   map[string]bool
	heap []string
}

// add puts p in the set.
func (s *pathSet) add(p string) {
	if s.in == nil {
		s.in = map[string]bool{}
	}
	if s.in[p] {
		return
	}
	s.in[p] = true
	h := append(s.heap, p)
	for i := len(h) - 1; i > 0; {
		up := (i - 1) / 2
		if h[up] <= h[i] {
			break
		}
		h[up], h[i] = h[i], h[up]
		i = up
	}
	s.heap = h
}

// del takes p out of the set.
func (s *pathSet) del(p string) {
	delete(s.in, p)
	if len(s.in) == 0 {
		clear(s.heap)
		s.heap = s.heap[:0]
	}
}

// len is the number of paths in the set.
func (s *pathSet) len() int { return len(s.in) }

// take removes and returns the smallest path; false if the set is empty.
func (s *pathSet) take() (string, bool) {
	for len(s.heap) > 0 {
		h := s.heap
		p := h[0]
		last := len(h) - 1
		h[0] = h[last]
		h[last] = ""
		h = h[:last]
		for i := 0; ; {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && h[l] < h[m] {
				m = l
			}
			if r < len(h) && h[r] < h[m] {
				m = r
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
		s.heap = h
		if s.in[p] {
			s.del(p)
			return p, true
		}
	}
	return "", false
}

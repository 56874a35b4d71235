package fakezk

// SeqName is seqName, for the tests of package fakezk_test.
var SeqName = seqName

// HistLen is how many prior versions and child changes the server keeps
// for lagging members (lag.go).
func (s *Server) HistLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.histN
}

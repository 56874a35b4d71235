package task

// Descendants returns how many scopes live under s: its children, their
// children, and so on (s itself not counted). A scope stops counting once
// it is closed (Close detaches it from its parent); a scope only canceled
// still counts, and still holds its memory.
//
// It is for tests and diagnostics: a long-lived session's scope count
// must come back to where it was once the flows, handles and cleanups
// started under it have ended, and a count that only grows is a leak.
// It walks the whole tree, so it costs time in proportion to its size.
// Executor goroutine only, like every method of Scope.
func (s *Scope) Descendants() int {
	n := 0
	stack := []*Scope{s}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := p.children.head; c != nil; c = c.sibling.next {
			n++
			stack = append(stack, c)
		}
	}
	return n
}

package combinators

// spin runs the iterations of Loop and Retry without growing the stack: an
// iteration whose continuation arrives synchronously (during the call) is
// followed by the next in a plain for loop, and one that went asynchronous
// re-enters run from its continuation.
type spin struct {
	inCall, again bool
}

// run calls iterate until it returns false (done, or went asynchronous
// without asking for more). iterate starts an iteration whose continuation
// calls next.
func (sp *spin) run(iterate func() bool) {
	for {
		sp.inCall, sp.again = true, false
		if !iterate() {
			sp.inCall = false
			return
		}
		sp.inCall = false
		if !sp.again {
			return
		}
	}
}

// next asks for another iteration: at once in run's loop if the current one
// is still in its call, else by re-entering through resume.
func (sp *spin) next(resume func()) {
	if sp.inCall {
		sp.again = true
		return
	}
	resume()
}

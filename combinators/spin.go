package combinators

// spin runs the iterations of Loop and Retry without growing the stack: an
// iteration whose continuation arrives synchronously (during the call) is
// followed by the next in a plain for loop, and one that went asynchronous
// re-enters run from its continuation.
//
// After spinBudget synchronous iterations in a row, run asks its caller to
// yield: to queue the next iteration on the executor's task queue and
// return, so that the job ends. Without that, a loop whose iterations all
// complete synchronously (a Retry of an error that fails at once, such as
// a Deadline already past, with no backoff and no attempt limit) would be
// one job that never ends: no other flow would run, and neither Close nor
// the end of Run's ctx (both looked for between jobs) would be honoured.
type spin struct {
	inCall, again bool
	resume        func() // the queued re-entry, made on the first yield only
}

// spinBudget is the most synchronous iterations a loop runs in one job, as
// the task package sends a chain of synchronous steps through the task
// queue every 64 nested steps.
const spinBudget = 64

// run calls iterate until it returns false (done, or went asynchronous
// without asking for more) and then returns false, or until spinBudget
// iterations in a row have completed synchronously and asked for more,
// when it returns true: the caller must then queue the next run on the
// task queue. iterate starts an iteration whose continuation calls next.
func (sp *spin) run(iterate func() bool) (yield bool) {
	for n := 1; ; n++ {
		sp.inCall, sp.again = true, false
		if !iterate() {
			sp.inCall = false
			return false
		}
		sp.inCall = false
		if !sp.again {
			return false
		}
		if n == spinBudget {
			return true
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

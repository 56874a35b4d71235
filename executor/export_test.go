package executor

// SetAfterPost makes each Submit on e call f once it has handed its flow
// to the executor and before it wakes Run: a test holds a submitter there
// while Close overtakes it.
func SetAfterPost(e *Executor, f func()) { e.afterPost = f }

// CancelInterleaved cancels f twice as two goroutines may: the first
// records a as the flow's cancel error, then the second's whole cancel
// with b runs (its job posted first), then the first posts its job.
func CancelInterleaved(f *Flow, a, b error) {
	f.mu.Lock()
	if f.canceled == nil {
		f.canceled = a
	}
	f.mu.Unlock()
	f.cancel(b)
	f.cancel(a)
}

// SetBeforeShutdown makes Shutdown on e, when it stops e itself (no Run
// drives it), call f before it runs the shutdown: a test starts a Run on
// another goroutine there.
func SetBeforeShutdown(e *Executor, f func()) { e.beforeShut = f }

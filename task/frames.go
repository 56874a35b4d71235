package task

// Frames is the state the task package keeps on each Runtime: how deep Run
// and Resume have nested in the job the runtime is running (past a bound
// they trampoline through Schedule) and the Flow bodies alive. A Runtime
// implementation embeds a Frames, which gives it the one method of
// Runtime that is not exported; it calls NewJob before each job it runs
// and Unwind when it is abandoned. Users need none of this: the executor
// does it.
type Frames struct {
	depth     int
	bodies    bodies
	freeSends *sendWait // requests' waits free for reuse (send)
}

func (fr *Frames) frames() *Frames { return fr }

// NewJob starts the count of nested Run and Resume calls afresh, for the
// job the runtime is about to run.
func NewJob(fr *Frames) { fr.depth = 0 }

// Unwind ends every Flow body alive on the runtime without resuming it:
// each suspended body is unwound from its Await (its deferred functions
// run, and an Await they make returns ErrUnwound) and its goroutine exits;
// no continuation is called. It is for a runtime that will never run
// again (a simulated process that crashed); it must be called on the
// goroutine that drives the runtime, between its jobs.
func Unwind(fr *Frames) { fr.bodies.unwind() }

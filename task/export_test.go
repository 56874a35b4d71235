package task

// LiveBodies returns the number of Flow bodies alive on rt (started, not
// yet returned), for the tests that check a body ends or is unwound.
func LiveBodies(rt Runtime) int { return rt.frames().bodies.len() }

package executor

// pruneSubs drops canceled subscriptions before Subscribe appends to a
// full list. Without it a session that never changes state (no event runs
// compactSubs) keeps every subscription ever made, with everything its
// callback holds: a lock holder's, a leader's, a cache's, one per cycle.
//
// It copies the live ones into a new array rather than in place, because
// Subscribe may be called from a subscriber while onEvent ranges over the
// old one. The new array has room for as many again, so the next prune
// comes after at least as many Subscribes as it copied: amortised O(1).
// Executor goroutine only.
func (e *Executor) pruneSubs() {
	if len(e.subs) < cap(e.subs) {
		return
	}
	live := 0
	for _, s := range e.subs {
		if !s.canceled {
			live++
		}
	}
	subs := make([]*subscription, 0, max(8, 2*live))
	for _, s := range e.subs {
		if !s.canceled {
			subs = append(subs, s)
		}
	}
	e.subs = subs
}

package fence

import (
	"github.com/zkflow/zkflow/internal/canary"
)

// Known bugs, switched back on by the canary tests (internal/canary).
const (
	// bugNoCheck writes without looking at the stored token: a former
	// holder overwrites a newer one's write.
	bugNoCheck canary.Name = "fence/no-token-check"
	// bugRefuseEqual writes only if the stored token is below the
	// writer's (< instead of <=): a holder's second write to a key is
	// refused, as if a newer holder had written.
	bugRefuseEqual canary.Name = "fence/refuse-equal"
	// bugCheckOnce checks the token on the first load only, and after a
	// lost compare-and-swap writes over what it loads again without
	// checking: the check is no longer covered by the compare-and-swap
	// that applies the write.
	bugCheckOnce canary.Name = "fence/check-outside-cas"
	// bugReadNoClaim reads without claiming: a Read by a holder whose
	// token is above the stored one returns the value and leaves the
	// stored token as it was, so a former holder's write still lands on
	// what Read returned.
	bugReadNoClaim canary.Name = "fence/read-no-claim"
)

// attempt is one fenced operation as a state machine that a driver steps:
// the blocking functions (write.go) and the tasks (tasks.go) run the same
// attempt, so the rule is written once. The driver loads, hands the
// entry to loaded, compare-and-swaps what loaded says (if anything) and
// hands the outcome to swapped, which says whether to load again.
type attempt[V any] struct {
	key   string
	token int64
	// update computes the new value from the stored one; nil for a read,
	// which keeps the value and only raises the token (a claim).
	update func(old []byte) ([]byte, error)

	checked bool  // a load was checked (for bugCheckOnce)
	version V     // the version of the last load
	next    Entry // what to compare-and-swap in
	value   []byte
	// Conflicts counts the compare-and-swaps lost to another write.
	conflicts int
}

// refused reports whether a key whose stored token is stored refuses
// token: only a higher token refuses.
func refused(stored, token int64) bool {
	if canary.On(bugRefuseEqual) {
		return stored >= token
	}
	return stored > token
}

// loaded judges a load: it fails with a *FencedError if a newer holder
// has written, or with update's error; otherwise it says whether a
// compare-and-swap of a.next against version v is needed (a read by the
// holder that already wrote the key needs none).
func (a *attempt[V]) loaded(e Entry, v V) (cas bool, err error) {
	skip := canary.On(bugNoCheck) || (canary.On(bugCheckOnce) && a.checked)
	if !skip && refused(e.Token, a.token) {
		return false, &FencedError{Key: a.key, Token: a.token, Stored: e.Token}
	}
	a.checked = true
	a.version = v
	if a.update == nil {
		a.value = e.Value
		if e.Token >= a.token || canary.On(bugReadNoClaim) {
			return false, nil
		}
		a.next = Entry{Value: e.Value, Token: a.token}
		return true, nil
	}
	nv, err := a.update(e.Value)
	if err != nil {
		return false, err
	}
	a.value = nv
	a.next = Entry{Value: nv, Token: a.token}
	return true, nil
}

// swapped takes the compare-and-swap's outcome: done, or load again.
func (a *attempt[V]) swapped(ok bool) (again bool) {
	if !ok {
		a.conflicts++
	}
	return !ok
}

//go:build race || zkflow_invariants

package task

// invariants is on in race builds (make test) and with -tags
// zkflow_invariants: Run then checks that every task calls its
// continuation at most once.
const invariants = true

package sim

import (
	"fmt"
	"slices"
)

// Tasks checks a work queue: every task submitted is executed, and none
// twice. Execute fails at once for a second execution; Check (or the
// Invariant) at the end for a task never executed.
type Tasks struct {
	submitted map[string]bool
	by        map[string]int
	excused   map[string]bool
	order     []string
}

// NewTasks returns an empty checker.
func NewTasks() *Tasks {
	return &Tasks{submitted: map[string]bool{}, by: map[string]int{}, excused: map[string]bool{}}
}

// Excuse records that task id may have been executed without the
// checker's hearing of it (an acknowledgement whose reply was lost, its
// outcome unknown): Check does not count it lost. A later Execute of id
// is still judged.
func (s *Tasks) Excuse(id string) { s.excused[id] = true }

// Submit records that task id was submitted (accepted by the queue).
func (s *Tasks) Submit(id string) {
	if !s.submitted[id] {
		s.order = append(s.order, id)
	}
	s.submitted[id] = true
}

// Execute records that client executed task id; it fails if id was
// executed before.
func (s *Tasks) Execute(client int, id string) error {
	if prev, ok := s.by[id]; ok {
		return fmt.Errorf("task %s executed twice (clients %d and %d)", id, prev, client)
	}
	s.by[id] = client
	return nil
}

// Executed is the number of tasks executed.
func (s *Tasks) Executed() int { return len(s.by) }

// Check fails for a task submitted and never executed, unless excused.
func (s *Tasks) Check() error {
	var lost []string
	for _, id := range s.order {
		if _, ok := s.by[id]; !ok && !s.excused[id] {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		return fmt.Errorf("%d of %d tasks lost: %v", len(lost), len(s.order), lost)
	}
	return nil
}

// Invariant is Check as an end-of-run invariant.
func (s *Tasks) Invariant() Invariant { return InvariantFunc(func(*Trial) error { return s.Check() }) }

//go:build !race && !zkflow_invariants

package task

const invariants = false

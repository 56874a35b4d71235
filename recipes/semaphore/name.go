package semaphore

import "github.com/zkflow/zkflow/recipes/internal/zkops"

// The children of a semaphore's path, as Apache Curator's
// InterProcessSemaphoreV2 names them: PATH/locks is the directory of the
// internal lock (recipes/lock, Curator's InterProcessMutex), PATH/leases
// the directory of the lease nodes.
const (
	locksDir  = "locks"
	leasesDir = "leases"
	// leaseTag separates a lease node's prefix from the sequence number
	// the server appends ("lease-" in Curator).
	leaseTag = "lease-"
)

// prefix is the name of a lease node before the server appends its
// sequence number: "_c_" + id + "-lease-", as Curator's protected mode
// names it.
func prefix(id string) string { return "_c_" + id + "-" + leaseTag }

// newID returns a 128-bit identifier in UUID text form from two draws of
// the executor's seeded source mixed with the session's id (zkops.NewID, zkops.Draws).
var newID = zkops.NewID

// seqOf parses the sequence number of a lease node's name (what follows
// the last "lease-"); ok is false for any other name.
func seqOf(name string) (seq int64, ok bool) { return zkops.SeqAfter(name, leaseTag) }

package election

import (
	"github.com/zkflow/zkflow/recipes/internal/zkops"
)

// tag separates a candidate's prefix from the sequence number the server
// appends. Apache Curator's LeaderLatch names its nodes "latch-<seq>" (with
// a "_c_<uuid>-" prefix in protected mode) and orders by what follows the
// tag, so the two see the same queue on one directory
// (TestCuratorLeaderLatchInterop).
const tag = "latch-"

// prefix is the name of a candidate node before the server appends its
// sequence number: "_c_" + id + "-latch-".
func prefix(id string) string { return "_c_" + id + "-" + tag }

// newID returns a 128-bit identifier in UUID text form from two draws of
// the executor's seeded source mixed with the session's id (zkops.NewID, zkops.Draws).
var newID = zkops.NewID

// seqOf parses the sequence number of a candidate name: what follows the
// last "latch-", as ZooKeeper formats a Java int with %010d: ten digits, or
// a minus sign and nine or ten digits once the counter has wrapped (see
// zkops.Exhausted). A name without that tag, or with anything else after
// it, is not a candidate: ok is false.
func seqOf(name string) (seq int64, ok bool) { return zkops.SeqAfter(name, tag) }

// queue returns the candidates among names, lowest number first
// (zkops.Queue); other names are left out.
func queue(names []string) []zkops.Member { return zkops.Queue(names, tag) }

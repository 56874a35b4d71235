// Package seqid hands out unique int64 IDs from a counter kept in a
// ZooKeeper znode, by compare-and-set on the node's data version. It is
// the counterpart of Apache Curator's DistributedAtomicLong and kazoo's
// Counter, and keeps the counter as an 8-byte big-endian long, the format
// Java services read and write on the same node.
//
// No ID is handed out twice, across any number of processes and
// sessions on the same node, through connection losses whose writes were
// applied or not, session expiry and crashes. Gaps are possible: an ID (or a
// whole block) whose write may have been applied but whose reply was lost,
// or that a process reserved and then crashed holding, is never handed out;
// nor is one whose task was canceled while its write was in flight (a call
// of a Client with blocks of 1 whose context ends then; a Client with
// blocks lets the reservation run on and keeps the block).
// IDs returned to calls of one Client (or one Allocator) that do not
// overlap in time increase; IDs of different generators interleave in no
// promised order. The node's value is always the largest ID reserved so
// far: every ID handed out is at most the value in the node.
//
//	ids, err := seqid.NewClient(ex, "/app/order-ids", 1000) // one compare-and-set per 1000 IDs
//	if err != nil {
//		return err
//	}
//	id, err := ids.Next(ctx) // never handed out before, by any process using this node
//	if err != nil {
//		return err
//	}
//
// To compose with other tasks, use the task face: Next and Reserve, and
// the Next of a Counter (NewCounter) or an Allocator (NewAllocator), are
// task.Task values to run on an executor yourself; Client runs them and
// waits.
// A missing node is created holding 0, with its missing ancestors
// (persistent); the option WithACL sets the ACL of what the recipe
// creates (task.OpenACL by default).
//
// The data is the 8-byte big-endian two's-complement long that Java's
// ByteBuffer.putLong writes: legacy services that write with the version
// they read can draw from the same sequence at once. Hex formats an ID as
// they do. A version of the node wrapped to -1 is refused
// (ErrVersionWrapped) rather than used as "any version"; a Counter whose
// own write left the version at -1 reads the node before its next write,
// so it refuses only while the version is still -1.
//
// A round under way when the session expires fails with
// task.ErrSessionExpired (run the call again; Client does). Do not delete
// the node, or create it again by hand: the node is the sequence, and IDs
// would repeat.
//
// Next and Reserve return tasks that hold no state between runs. An
// Allocator's state is touched only by its tasks, on the one executor
// that runs them. Client is the blocking API, safe for concurrent use
// from any goroutine. With blocks, a Client's reservation of the next
// block is not canceled when the context of the call that started it
// ends: that call returns at once, and the block goes to later calls.
// A nil or zero Client, Counter or Allocator (not made by its
// constructor) is refused with an error matching task.ErrInvalidArgument,
// and a nil ctx with one matching executor.ErrNilContext.
//
// The protocol, contention, the fault table and the measured figures:
// recipes/seqid/PROTOCOL.md.
package seqid

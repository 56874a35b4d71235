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
// or that a process reserved and then crashed holding, is never handed out.
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
//
// Start reading at Next and Reserve (seqid.go), then Counter (counter.go),
// Allocator (alloc.go) and Client (client.go); the node format is in
// codec.go. The option WithACL sets the ACL of the sequence node when the
// recipe creates it (task.OpenACL by default).
//
// # Protocol
//
// One round of Reserve(path, n) (Next is Reserve(path, 1)):
//
//  1. get path, reading the value v and the data version ver. A missing
//     node is created holding 0 (NodeExists there means another client
//     created it: fine) and read again, so the first ID of a new sequence
//     is 1.
//  2. If ver is -1 the round fails with ErrVersionWrapped: -1 means "any
//     version" to ZooKeeper and would turn the write into a blind one.
//     If v + n overflows int64 it fails with ErrOverflow. Data shorter than
//     8 bytes fails with ErrShortData.
//  3. set path to v + n, expecting version ver. Success hands out
//     v+1 .. v+n.
//
// On errors: BadVersion (another client won the round), NoNode (the node
// was deleted meanwhile), connection loss (the write may or may not have
// been applied) and not sent go back to step 1. After connection loss the
// round never assumes the write failed (that would hand out its IDs twice)
// nor that it succeeded (the reply is lost, so it does not know which
// version it wrote): it reads again, and the IDs of a lost write that was
// applied are skipped. The rounds repeat without a count limit, until
// success, another error, or the end of the scope (its deadline, a cancel,
// session expiry). A retry after connection loss waits for the reconnect
// (the executor pauses its task queue), it does not spin.
//
// # Contention
//
// After BadVersion another client has won the round, and if every loser
// read again at once most of them would lose again: each loss costs a read
// and a write, so n contenders retrying at once cost the server about n
// requests per ID. So after the k-th BadVersion in a row a round waits a
// random time drawn uniformly from [0, L * 2^(k-1)), L being the latency
// of the write it lost (measured on the executor's clock, so it follows
// the network's round trip and the server's load), the bound at most 32 L
// and at most 50 ms (a bound that kept doubling a loaded server's latency
// left it idle: with 64 clients on a loaded machine the rate fell to a
// few hundred IDs per second). The draws come from the executor's seeded
// source (a simulation replays them). Other retries (connection loss, not
// sent, the node gone) start at once. Measured on one standalone server
// on loopback, one session per client, every client drawing IDs without
// pause (internal/stackbench; the figures of the last run are in
// bench/README.md):
//
//	ZK_REQUIRED=1 go test -run '^$' -bench 'CAS' -benchtime 4000x ./internal/stackbench
//
// about 6 requests per ID at 16 clients and 11 at 64, against about 15 at
// 16 before the wait was added; at 64 clients the rate of IDs stays that
// of 16.
//
// A Counter (counter.go) skips step 1 while it can: it remembers the value
// and version its own last write left, and writes the next value with that
// version straight away, one round trip per ID for as long as no other
// client writes the node. BadVersion, connection loss, NoNode or not sent
// on that write send it back to the full round above, so its safety is the
// round's. Client with blocks of 1 uses a Counter.
//
// Deleting the node resets the sequence to 0: do not. (The reserved-ID
// persistence service of this project is what survives the loss of every
// server's data.) A node whose version has reached -1 stays unusable by
// this recipe: a person must move the sequence to a fresh node (a version
// of -1 is reached after 2^32-1 writes).
//
// # Interoperation with the Java node format
//
// The data is the 8-byte big-endian two's-complement long that Java's
// ByteBuffer.putLong writes and getLong reads: the format of the legacy
// services that use the same node, so they and this package can draw from
// one sequence at once (they too must write with the version they read).
// Bytes after the first 8 are ignored when reading and kept as they are
// when writing. Hex formats an ID as the legacy code does (16 lower-case hex
// digits, negative values as their two's complement).
//
// # Faults
//
// Crash and restart: the recipe keeps nothing in its session (the node is
// persistent) and draws no random names, so a new process with the same
// identity simply reads the node, as any client does. What the dead
// process had is lost as IDs, never repeated: a compare-and-set in flight
// that was applied, and the blocks an Allocator or Client held.
//
// A process paused past its session timeout runs on with what it read: a
// round still under way when it hears of the expiry fails with
// task.ErrSessionExpired (run the call again on the new session, which
// reads first; Client does), and a Counter whose remembered version
// went stale meanwhile gets BadVersion and reads again. Blocks in hand
// before the pause are handed out after it: their compare-and-set
// succeeded, so they are the process's alone.
//
// An operator's delete: the node is the sequence. The next round creates
// it again holding 0, and IDs repeat from 1. A node created again by hand
// with the value it held does not help: its version starts again at 0,
// and a round or a Counter holding a version read from the old node
// succeeds on the new one once it reaches that version, handing out IDs
// again (a version does not tell two incarnations apart). So the seqid
// scenario (explore_test.go) takes crash-restart and pause but not the
// operator, and judges that no ID is handed out twice, that the history
// of draws is linearizable, and that no ID is above the node's value.
//
// # Goroutines
//
// Next and Reserve return tasks: they run on an executor goroutine and
// hold no state between runs. An Allocator's state is touched only by its
// tasks, on the one executor that runs them. Client is the blocking API,
// safe for concurrent use from any goroutine.
//
// # Measured
//
// On 2026-11-22, one standalone ZooKeeper server started by the tests on
// the same 2-CPU virtual machine (amd64), with
//
//	ZK_REQUIRED=1 go test -run '^$' -bench Real -benchtime 2000x ./recipes/seqid
//
// (2000 IDs in all per benchmark, shared out between the clients, each
// client on its own session and executor, all on one node):
//
//	Next (CAS), 1 client:           1246 IDs/s
//	Next (CAS), 4 clients:          1238 IDs/s
//	Next (CAS), 16 clients:          916 IDs/s
//	Allocator, blocks of 1000, 16:  30151 IDs/s
//
// With only 2000 IDs the block figure is mostly the 16 first reservations;
// run longer (-bench RealBlocks -benchtime 1000000x, same day and machine)
// it was 414528 IDs/s, bounded by the executor round trip per ID, not by
// the server. The blocking Client takes IDs from its block under a
// mutex on the caller's goroutine, with no executor round trip; the same
// long run (-bench RealBlocks -benchtime 1000000x, later the same day,
// other jobs on the machine) gave 263663 IDs/s through the Allocator and
// 760668 IDs/s through the Client, where one compare-and-set per 1000
// IDs is most of the cost. The comparison with Apache Curator's
// DistributedAtomicLong, same clients and server, is in bench/README.md.
package seqid

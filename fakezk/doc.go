// Package fakezk is an in-memory ZooKeeper 3.8 server with many sessions, a
// controllable clock, fault injection and a seeded deterministic scheduler.
// Each client connection is a *Conn, which implements task.Conn, so the
// executor, the recipes and the user's own task chains run on it exactly as
// they run on a real ensemble through zkadapter.
//
//	srv := fakezk.New(fakezk.Config{})
//	conn := srv.Connect(fakezk.ConnConfig{})
//	ex, err := executor.New(executor.Config{Conn: conn})
//	go ex.Run(ctx)
//	// ... recipes and task chains on ex; faults are calls:
//	srv.Drop(conn, true)                    // connection lost, requests in flight applied
//	srv.Partition(conn, time.Second, false) // cut off for a second: the session survives
//
// The server's clock times sessions, partitions and delays. A server with
// no Config.Clock runs on the wall clock in automatic mode, like a real
// server (timed faults heal, sessions expire in real time), and on
// NewClock(Epoch) in deterministic mode. An executor given one of its
// Conns and no clock of its own takes the server's (Conn.Clock), so the
// two never run on different clocks by omission; a deterministic test
// gives the server a simulated Clock and advances it.
//
// Any ZooKeeper client can use it over TCP: fakezk/wire serves ZooKeeper
// 3.8.0's client protocol for a Server, so go-zookeeper, Curator, kazoo or
// zkCli connect to the in-memory server, with its clock and its faults.
//
// It reproduces ZooKeeper 3.8's behaviour: paths, creates of every mode
// (sequential names from the parent's cversion, containers and TTL nodes
// with Config.ExtendedTypes, reaped on the server's clock), deletes,
// versions, multi with rollback, ACLs and authentication (digest and ip),
// one-time, persistent and recursive watches, session negotiation and
// expiry, the connect handshake, and the packet limit
// (Config.MaxPacketSize). It is checked differentially: the cases of
// internal/conformance that a real server can run pass unchanged against
// ZooKeeper 3.8.0, and seeded random operation sequences give the same
// results on both (times and zxids aside).
// getChildren returns names in an order drawn from the seed.
//
// Every response, watch notification and session event for a Conn is
// delivered through that Conn's queue in the order the session observed
// it; done runs exactly once per Do, a watch at most once, no callback
// runs concurrently with another callback of the same Server, and none
// with the server's lock held. After an expiry a Conn opens a new session
// by itself: the client sees EventNotWatching on each watch, StateExpired,
// then StateConnected with the new session's id. ConnConfig.Root is a
// client-side chroot, as ZooKeeper's "host:port/app".
//
// Two modes. In automatic mode (the default) a request is applied inside
// Do and what it causes is delivered before Do returns: the mode to put
// behind a real-time executor. In deterministic mode (Config.Deterministic)
// nothing is applied or delivered until the test calls Step or
// RunUntilIdle, and the seed chooses the interleaving: same seed, same
// calls, the same history byte for byte (Server.TraceHash); a failing seed
// of TestDeterminism replays with -fakezk.seed=N. Clock is a simulated
// task.Clock (Advance, Set, AdvanceToNext) that fires due timers on the
// caller's goroutine with no real sleep. For whole-system simulation with
// many clients under drawn faults, see fakezk/sim.
//
// Faults: Drop (requests in flight applied or not), Partition (for a
// duration of the clock; expiry if longer than the timeout), Expire, Delay
// (hold a Conn's deliveries), Restart, LoseQuorum, Wipe (total ensemble
// loss), SetCounters (versions and sequence counters near int32's
// maximum) and Lag (the member a Conn talks to falls behind the leader:
// its reads without a watch miss what it has not caught up with). Each
// is recorded in the trace.
//
// To keep the tree on disk, Config.Journal hears of every transaction
// before its reply, Snapshot reads the tree and Restore rebuilds a server
// from it (the fakezk command's dataDir, fakezk/wire/cmd/fakezk).
//
// What it reproduces rule by rule, access control, delivery order,
// the chroot, every fault, persistence, and the measured figures:
// fakezk/PROTOCOL.md.
package fakezk

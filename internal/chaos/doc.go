// Package chaos holds the real-ensemble chaos test (chaos_test.go): the
// lock (recipes/lock), ID (recipes/seqid) and master-worker
// (recipes/masterworker) recipes run together on a real 3-server
// ZooKeeper ensemble while servers are killed and restarted and clients
// are cut off silently or delayed, at random, from a printed seed, and
// the test checks the invariants the simulation checks on fakezk:
//
//   - mutual exclusion judged by fencing tokens: every critical section
//     logs "enter" and "exit" with Held.Fenced writes; in the order the
//     ensemble applied them, tokens never go down (fakezk/sim's
//     FencedEntry names the entries);
//   - unique IDs across all generators (fakezk/sim's IDs), and a
//     linearizable history for the compare-and-set generators (porcupine,
//     with calls and returns recorded in real-time order);
//   - no lost task and no task answered twice (fakezk/sim's Tasks); every
//     answer is the handler's output for that task; at the end no task is
//     left in /tasks or an assignment directory, and /status holds exactly
//     one status per submitted task. Handler re-executions, which the
//     master-worker recipe allows (at least once, with exactly one status),
//     are counted and printed.
//
// The schedule is driven by progress, not by sleeps: a server is killed
// once the workloads have made a number of operations since the last
// restart (half the time the leader, else a server drawn from the seed),
// restarted once they have made more operations with it down, and so on
// for a fixed number of kills. At most one server is down at a time, so
// the ensemble keeps its quorum; a killed leader costs an election. Before
// each kill the test checks that every server is running and names one
// that exited by itself; and should the workloads stall for 30 s with one
// server down and no leader among the two left (an election of ZooKeeper
// 3.8 that never settled was seen once in about fifteen runs), it
// restarts the killed server early, says so, and counts it in its last
// line (restarted_early_no_leader): a stall with a leader still fails.
//
// After each restart comes a network fault on one client, drawn from the
// seed (cut_test.go). Every workload client reaches the ensemble through
// proxies of its own (internal/netproxy, one per server), so the schedule
// can cut it off silently, as a real partition does: no FIN, no RST,
// nothing heard either way, from every server or from one; or delay every
// byte it sends and receives by 1 to 20ms. The fault lasts while the
// other clients make a number of operations, and is healed either with
// an RST on the silenced connections or by leaving the client to notice
// by its own timeout, within its session timeout, so sessions survive.
//
// It runs in the normal unit run when ZooKeeper is installed (ZK_REQUIRED=1
// makes its absence a failure), in a minute or two. Flags: -chaos.seed
// (default: drawn from the time, and printed), -chaos.kills, -chaos.cuts
// (network faults; the first -chaos.kills of them follow the restarts).
package chaos

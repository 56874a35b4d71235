// Package chaos holds the real-ensemble chaos test (chaos_test.go): the
// lock (recipes/lock), ID (recipes/seqid) and master-worker
// (recipes/masterworker) recipes run together on a real 3-server
// ZooKeeper ensemble while servers are killed and restarted at random,
// from a printed seed, and the test checks the invariants the simulation
// checks on fakezk:
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
// the ensemble keeps its quorum; a killed leader costs an election.
//
// It runs in the normal unit run when ZooKeeper is installed (ZK_REQUIRED=1
// makes its absence a failure), in a minute or two. Flags: -chaos.seed
// (default: drawn from the time, and printed), -chaos.kills.
package chaos

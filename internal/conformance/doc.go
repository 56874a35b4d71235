// Package conformance is a table of ZooKeeper behaviours (path rules, error
// precedence, Stat fields after each operation, sequential naming and its
// wrap, ephemeral rules, every watch trigger, persistent and recursive
// watches and their removal (cases_pwatch.go), multi results, session
// expiry, access control) written against task.Conn only, so that the
// same cases check fakezk and, through zkadapter, a real ZooKeeper 3.8
// server.
//
// A target provides connections (Target) and, optionally, the powers some
// cases need (Expirer, Dropper, InFlight, Partitioner, CounterSetter,
// Reaper, Clocked, AuthTarget for connections that present credentials);
// a case that needs a power the target lacks is skipped.
// Run(t, newTarget) runs every case as a subtest under its own fresh node
// (/zkflow-conformance/<case>), so a shared real server can be used;
// RunCases runs a selection, such as ReapCases (containers and TTL nodes,
// cases_reap.go), which want a server configured for them: TTL nodes on
// and a short container check interval.
//
// Clients record what their callbacks receive and never block in them;
// the harness waits by settling the target (a deterministic fake runs its
// scheduler) and then, for a real server, on the callbacks, bounded by a
// generous limit. Negative checks ("no event") rely on ZooKeeper's
// guarantee that a client sees a watch event before any later response
// that reflects the change: a Barrier round trip after the write.
//
// Start reading at cases.go; each case names the behaviour it checks.
package conformance

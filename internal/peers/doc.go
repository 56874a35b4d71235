// Package peers builds and runs the benchmark harness's peer programs, the
// same coordination work written with Apache Curator 5.4 (Java), kazoo
// (Python) and plain go-zookeeper/zk (Go), whose sources live in
// bench/peers/<kind>; and it defines the result line they all print, so
// the harness, its tests and other packages' tests (the lock recipe's
// interop test against Curator's InterProcessMutex) share one format.
//
// Start here: Available(kind) says whether a peer can run on this machine
// (the error wraps ErrUnavailable and says how to install it: make
// bench-deps); Build(kind, DefaultCacheDir()) builds it (javac against
// Debian's jars for Curator, go build for gozk, nothing for kazoo) into a
// directory named by a hash of its sources, so an unchanged program is not
// built twice and a stale one is never used; Program.Run(ctx, Params)
// runs it and returns its Result, or an error wrapping ErrRun that quotes
// the program's output.
//
// # Parameters and scenarios
//
// Every program takes the flags Params.Args writes: server, scenario,
// clients (each a session of its own), a duration and a warm-up, or a
// number of operations per client, the node path, the pipeline's
// outstanding reads and the session timeout. Scenarios: "lock" (acquire +
// release), "cas" (one counter increment by compare-and-set), "pipeline"
// (gozk: reads with Outstanding in flight on one session), "get" and
// "set" (gozk: one node read, or written, by Outstanding goroutines on one
// session), "interop",
// "latchinterop", "rwinterop" and "seminterop" (Curator: see BuildCurator;
// seminterop also takes leases). Program.Scenarios lists what each
// implements; bad parameters get ErrBadParams, never a started process.
//
// # The result line
//
//	ZKBENCH impl=curator scenario=lock clients=4 ops=1234 errors=0 secs=3.000512 total=1650 cpu=912345.0 min=810.2 p10=... p50=... p99=... p999=... max=...
//
// ops counts measured operations (started after the warm-up, ended without
// error), total every operation that succeeded, warm-up included; secs is
// the measuring time; cpu the CPU time (µs, user and system, every
// thread) the program's process used over the same window, read from its
// own counters (Run adds the whole process's, from its rusage, as
// Result.ProcessCPU); latencies are microseconds at the Quantiles, by
// nearest rank (Rank), computed the same way in Go, Java and Python.
// ParseResult refuses unknown keys and partial quantile sets, so a program
// that drifts from the format fails loudly.
//
// # Measuring
//
// Drive runs a Load (workers calling an operation in a loop, a warm-up,
// then a duration or a count) and measures it; the harness uses it for the
// library's side and the gozk program for its own, so both measure the
// same way. It reads the wall clock: measuring real time is its job. A
// worker whose operations fail MaxErrors times in a row ends the run with
// ErrTooManyErrors instead of spinning against a server that is down.
//
// Run, Build and Available may be called from any goroutine. Programs are
// started in a process group of their own and killed with it when the
// context ends or the calling process dies.
package peers

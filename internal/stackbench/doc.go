// Package stackbench holds the benchmarks of the whole stack (executor,
// zkadapter, recipes) against raw go-zookeeper doing the same work, on a
// real server started on loopback and, for ours, on fakezk too. Each
// reports, besides time, allocations and client CPU time per operation:
// on a real server the server is another process, so the process's CPU
// time (getrusage) and allocations are the client's alone, and they vary
// far less than throughput when other work shares the cores.
//
//	ZK_REQUIRED=1 go test -run '^$' -bench . -benchmem ./internal/stackbench
//
// The package has no code: only these benchmarks and their helpers.
package stackbench

// Package wiresim runs recipes through the production path under seeded
// faults on the wire: each client is an executor on a zkadapter.Conn
// (go-zookeeper over TCP on loopback) to one fakezk.Server served by
// fakezk/wire, on the real clock with a short tick (25ms: sessions of
// 500ms), and the seed's plan injects faults on the clients' sessions.
// The scenarios are judged by the checkers of the in-memory simulation
// (fakezk/sim): the lock by its fencing log (sim.CheckFencingOf on the
// server's tree), the ID counter by sim.IDs, the at-least-once queue by
// sim.Tasks, leader election by the fencing log of its leaders' writes.
//
//	func TestLock(t *testing.T) {
//		wiresim.Check(t, wiresim.Scenario{
//			Name:   "wire-lock",
//			Faults: wiresim.AllClasses,
//			Setup:  setup,  // func(r *wiresim.Run, ctx context.Context) error
//			Client: client, // client i's loop on r.Execs[i], until ctx ends
//			Check:  func(r *wiresim.Run) error { _, err := sim.CheckFencingOf(r.Server, "/fence"); return err },
//		}, 100)
//	}
//
// What a seed fixes, and what it does not: the seed fixes the schedule of
// faults (which class, at what instant of the server's clock since the
// workload started, on which client's session, for how long) and every
// client's randomness (Run.Rand, the executors' seeds), so the operations
// each client chooses are the seed's. It does not fix the interleaving
// that go-zookeeper's goroutines, the TCP connections and the real
// clock's timers produce: which request a fault catches in flight, and
// what the clients do meanwhile, differ from run to run. A failed seed is
// reported with its plan, the trace of the run (faults, session events,
// what the workload logged) and the command that runs it again with the
// server's trace (-wiresim.seed=N): the same schedule, not the same
// history. The in-memory simulation, whose seeds replay bit for bit, is
// where to find a history; this one checks that the production path,
// go-zookeeper's reconnects, pipelining and timers included, keeps the
// same guarantees.
//
// The faults (Class): a session's link dropped with the requests in
// flight applied or not, partitions shorter and longer than the session
// timeout (an expiry), an expiry, held deliveries, a server restart, and
// the client's TCP connection cut half-way through a frame or right after
// one (the server applies a request whose reply has nowhere to go), and
// the server's reading of a connection stalled just after it read the
// client's last bytes (past go-zookeeper's patience, the client resumes
// the session on a new connection while the old one holds requests).
//
// Seeds run Parallel() at a time (they spend most of their time waiting
// on the real clock). make sim runs TestSimExplore with SIM_WIRE_SEEDS
// seeds of a fixed and of a drawn range per scenario, and its summary
// counts them with the in-memory seeds. How a seed runs, the figures and
// the canaries: the section "Through the wire" of fakezk/sim/PROTOCOL.md.
package wiresim

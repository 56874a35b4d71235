// Package sim runs coordination code under deterministic simulation: one
// fakezk server and N clients, each an executor on a session of its own,
// all driven from the caller's goroutine on one simulated clock, under
// faults the seed chooses. One seed is one exact history, replayable from
// a test flag.
//
// Use it to test your own task chains or recipe: describe a Scenario
// (clients, the faults it allows, a Setup, a Workload that submits flows
// and reports with Trial.Check, Trial.Errorf and Trial.Progress, and
// Invariants checked at the end), then run seeds:
//
//	func TestCounter(t *testing.T) {
//		sim.Check(t, sim.Scenario{
//			Name:       "counter",
//			Clients:    3,
//			Faults:     sim.Faults{Allow: sim.AllFaults &^ sim.Of(sim.Operator)},
//			Duration:   10 * time.Second,
//			Setup:      setup,    // func(*sim.Trial) error, run with no fault
//			Workload:   workload, // starts flows with executor.Submit(r.Execs[i], ...)
//			Restart:    restart,  // a crashed client's new process starts its workload
//			Invariants: []sim.Invariant{sim.InvariantFunc(linearizable)},
//		}, 200)
//	}
//
// Each seed builds the world and runs Setup without faults, runs the
// Workload under the seed's fault plan for Duration of simulated time,
// stops the faults and requires every client to make progress again
// within Recovery (liveness), waits for Quiesce, then checks every
// Invariant. A violation reported at any moment, a failed invariant,
// liveness or quiescence not reached in time, or a livelock fails the
// seed; Result.Kind says whether it was safety or liveness. The complete
// runnable version is Example in fakezk/sim/example_test.go.
//
// The fault classes a Scenario may allow (Faults.Allow; AllFaults is every
// class but Wipe and the counter classes): connections dropped with
// requests applied or not, short and long partitions, expiry, delayed
// deliveries, server restarts, wipes, clock jumps, a process crashing and
// restarting with the same identity (Scenario.Restart), an operator
// deleting or re-creating nodes (Scenario.Operator), a process paused past
// its session timeout, an ensemble member lagging behind the leader (a
// client's reads miss what it has not heard of: reads without a watch,
// and watched reads too in half the seeds that lag; after one restart
// in two, the restarted process's first member lags; after one cut in
// two that applied requests and lost their replies, the member the
// session comes back through has not applied those yet), and
// sequence counters near their end or directories deleted when empty
// (Scenario.Counters); and, for the blocking faces, contexts that end
// inside an outage the world cuts at a request of their client
// (Scenario.OutageEnds) and goroutines that wake late, the world going
// on meanwhile (Scenario.ActorLag). One seed in sixteen runs with no
// fault; one in four with two clients or more starts twins, two clients
// with one executor seed.
//
// Checkers for common properties: IDs (unique IDs, a linearizable
// counter), Fencing and CheckFencing (mutual exclusion judged by fencing
// tokens), Leaders (at most one acting leader), Tasks (no task lost or
// executed twice), TreeEquals (a cache equal to the server's tree),
// Registrations (no registration registered on a session older than its
// executor's), Scenario.OwnDeletes (the ephemeral nodes at or below a
// path deleted only by their own session, the server or an operator,
// judged from the server's journal; Scenario.OperatorClients names a
// scenario's own operator run on a client's executor), Scenario.OwnIncarnations (a persistent node deleted by a
// process only if it made or wrote that incarnation, from the journal
// too), and Call (a blocking call's outcome: a context's error only once
// its context ended, at once when it had ended before the call, and no
// error but those its doc allows: BeginCall, CallRules). LostReplies loses the replies of creates, and of deletes with
// a cut others act in, on top of the faults. The world's executors run
// without their sync after a reconnect (executor.Config), so that a flow
// that settles a lost write without a sync of its own is caught, but in
// one seed in four of Explore's (SyncedSeed), which run them as users do;
// Scenario.SyncAfterReconnect turns it on in every seed.
// World.Go runs goroutines that call the blocking APIs (the recipes'
// Clients, executor.Await) in lockstep with the world, so a seed with
// them is one history too.
//
// Everything in a run comes from the seed, and nothing reads the wall
// clock. Check(t, sc, n) runs seeds 1..n and stops at the first that
// fails, printing the command that replays it with its faults and the
// tail of its trace (connections are numbered from c1 as they are made:
// client i's first, r.Conns[i], is c<i+1>; a restarted process gets the
// next free number). The flags, in every test binary that imports the
// package, after the package on the command line: -sim.seed=N runs only
// seed N, traced; -sim.seeds=N overrides the number of seeds;
// -sim.tail=K sets how many trace lines are printed (0: all);
// -sim.svg=FILE, with -sim.seed, draws the seed as an SVG timeline.
// Determinism(t, sc, seeds) runs seeds twice and compares their traces.
//
// Through the wire: internal/wiresim runs the lock, the ID counter, the
// at-least-once queue and leader election through the production path
// (zkadapter, so go-zookeeper over TCP) against a fakezk/wire server on
// the real clock, under seeded faults on the wire, judged by these
// checkers (Tree, CheckFencingOf, IDs, Tasks). A seed there fixes the schedule of faults
// and operations, not the interleaving of go-zookeeper's goroutines and
// timers: it runs again, it does not replay.
//
// How a seed runs in detail, every fault class and what a recipe owes
// under it, the canaries each recipe's known bugs are caught by, the large
// run, the simulation's speed and the wire mode: fakezk/sim/PROTOCOL.md.
package sim

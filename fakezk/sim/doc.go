// Package sim runs coordination code under deterministic simulation: one
// fakezk server and N clients, each an executor on a session of its own,
// all driven from the caller's goroutine on one simulated clock, under
// faults the seed chooses. One seed is one exact history, replayable from
// a test flag.
//
// # Where to start reading
//
// world.go (World: the server, the clients, Step/Drive/Settle, Submit and
// Run), scenario.go (Scenario, Trial, RunSeed: the phases of one seed),
// faults.go (the fault classes and the plan a seed draws), report.go
// (Check, Catch, Determinism, the replay command and the flags), and the
// invariant checkers: ids.go (unique IDs, linearizability of a counter),
// fencing.go (mutual exclusion judged by fencing tokens), leaders.go (at
// most one acting leader at any simulated instant, but for a leader the
// clock jumps paused past its margin, left to fencing), tasks.go (no task lost
// or executed twice), tree.go (a cache equal to the server's tree).
// actors.go runs user goroutines that call the blocking APIs (World.Go:
// The blocking face, below). root.go runs the clients under a chroot (Scenario.Root); timeline.go
// records a seed's picture and svg.go draws it (svglayout.go places
// the lanes and rows, svglane.go draws a lane; The picture, below).
//
// # One seed
//
// RunSeed(sc, seed, trace) goes through five phases, on the calling
// goroutine:
//
//  1. Build the world (Scenario.Clients, SessionTimeout, Server, Wrap) and
//     run Setup with no fault.
//  2. Switch the seed's fault plan on, call Workload (which starts flows
//     with Submit or executor.Submit) and run until Duration of simulated
//     time has passed. Before each of the server's scheduling steps, and
//     before each advance of the clock, a fault is injected with the
//     plan's probability.
//  3. Switch the faults off (partitions and server restarts under way heal
//     on their own timers) and run until Live holds, within Recovery of
//     simulated time: liveness. The default Live asks every client for a
//     Trial.Progress after the faults stopped.
//  4. Set Stopping and run until Quiesce holds (flows ended, nodes
//     cleaned up), within Recovery.
//  5. Check every Invariant, then close the world (executors fail their
//     flows with task.ErrClosed; Trial.Closing is true and reports made
//     then are ignored).
//
// A violation the workload reports with Trial.Errorf or Trial.Check at
// any moment, a failed Invariant, Live or Quiesce not reached in time, or
// flows that run 1<<16 steps at one instant without time passing (a
// livelock: World.Stalled) fail the seed; Result.Kind says whether it was
// safety or liveness.
//
// # Faults
//
// A Scenario says which classes it allows (Faults.Allow; AllFaults is
// every class but Wipe and the counter classes). Per seed, one seed in
// sixteen runs without any fault; the others switch each allowed class on
// with probability one half (at least one) and draw an injection rate
// from [MaxRate/16, MaxRate] (default MaxRate 0.02) for the network and
// server classes, and a quarter of such a rate for the process and
// operator classes (crash-restart, operator, pause) and for the counter
// classes (counters, empty-dir), which draw their plan and their
// injections from a random stream of their own, one per group: a seed
// whose plan has none of a group runs the history it ran before the
// group existed. Each injection picks a class among those on and, for
// the per-client ones, a client:
//
//	drop-unapplied   connection dropped, requests in flight not applied (Server.Drop(c, false))
//	drop-applied     connection dropped after the server applied them (Server.Drop(c, true))
//	partition-short  client cut off for 1ms..0.7×timeout: the session survives
//	partition-long   client cut off for 1.2..3×timeout: the session expires
//	expire           the session expires now (Server.Expire)
//	delay            the client's deliveries held for 1ms..1s (Server.Delay)
//	restart          server down, or up without a quorum (every handshake refused), for
//	                 0..2×timeout, data and sessions kept
//	wipe             every server and its data lost (Server.Wipe), at most Faults.MaxWipes per run;
//	                 the empty servers refuse every client that saw a later zxid until, more than
//	                 a session timeout after its last contact, it waives its zxid and learns its
//	                 session expired (StateExpired, then a new session), or the new zxids pass it
//	clock-jump       the clock moves 100ms..2×timeout at once; every timer due fires
//	                 (the server's expire sessions) before any client runs: every
//	                 client is paused for the jump (World.Jump, World.Jumped)
//	crash-restart    the client's process dies with no cleanup (World.Crash: its executor is
//	                 abandoned, its flows never deliver, its timers never fire, its session lives
//	                 on until the server expires it); a new process with the same identity (client
//	                 index, executor seed) starts at once on a new session and Scenario.Restart
//	                 starts its workload
//	operator         a leaf under Scenario.Operator deleted through the server's admin path (no
//	                 session, any version); one time in two created again at the same path, with
//	                 the same data or "operator": an ephemeral node as an ephemeral of an
//	                 operator's session that expires after the timeout, or as a persistent node
//	                 the operator deletes again within 2×timeout
//	pause            the client's process freezes for 1.2..3×timeout (World.Pause): its executor
//	                 is not stepped, its timers and deliveries wait, the server hears no pings
//	                 and expires the session (Server.Freeze); then it runs on where it stopped,
//	                 its queued jobs first, and learns of the expiry from what was held
//	counters         a directory of Scenario.Counters has its stored cversion (the counter that
//	                 names sequential children) set to within 16 of int32's maximum (World.SetCounters),
//	                 as after two billion creates; where ZooKeeper 3.8's counter then stays: every
//	                 later child is numbered 2147483647 (see recipes/internal/zkops, Exhausted)
//	empty-dir        a directory of Scenario.Counters deleted while it has no child (the operator,
//	                 through the server's admin path): a recipe that creates it again starts its
//	                 counter at 0 again, so numbers handed out before are handed out again
//
// A scenario that allows crash-restart implements Scenario.Restart, one
// that allows operator names Scenario.Operator, and one that allows a
// counter class names Scenario.Counters (a seed fails as a setup failure
// otherwise). What a recipe owes under them: a crashed
// process's session and ephemerals live on until the timeout, so the new
// process (same identity, same randomness) must not take the old
// process's nodes for its own; an operator's delete is a loss the recipe
// reports (lock lost, leadership ended, member gone) and a node created
// again at the same path must not pass for the recipe's own; a paused
// process cannot know what happened while it was frozen, so "at most one
// acting leader" cannot hold across a pause (Leaders does not count a
// process that froze while acting) and safety is judged by fencing:
// every fenced write it makes after it resumes must be refused. Under
// the counter classes, a recipe must not take a node numbered like one
// it knew for that node (numbers come again after a reset), nor order
// nodes by a number that has stopped counting (2147483647 again and
// again): the queue recipes never queue an exhausted number and start
// the directory afresh (recipes/lock, Sequence wrap-around).
//
// # Twins
//
// One seed in four with two clients or more (drawn from a stream of its
// own; Scenario.NoTwins opts out) starts one client with another's
// executor seed (Plan.Twin, Config.Twin): two processes that draw the
// same random numbers, as two copies of one program started with one
// seed do, so every name, prefix or id a recipe draws at random is drawn
// by both, at the same moments of their flows. Names made unique only by
// such draws clash; a recipe makes them unique with the session's id (a
// Master's lease) or settles a lost reply by prefix and owner (the lock's
// contenders). A twin restarted after a crash keeps the seed it shares.
//
// # Session ids
//
// In every scenario the server hands out session ids as an ensemble of
// three or five members would (fakezk/sessionid.go: the member's id in the
// high byte; the member that creates each session drawn from the seed),
// so the clients' ids, and those of processes restarted after a crash or
// of sessions opened again after an expiry, do not follow creation order
// (TestSessionIDsOutOfOrder): a recipe that orders candidates by session
// id, or by a name that carries one, meets the order a real ensemble
// gives.
//
// The scenarios of this repository and the new classes they take (all
// take the network and server classes as before):
//
//	scenario             crash-restart  operator                               pause  counters, empty-dir
//	lock+id (here)       yes            contenders, the lock's directory       yes    the lock's directory
//	rwlock               yes            contenders, the lock's directory       yes    the lock's directory
//	fence                yes            contenders (deletes only)              yes    no (5)
//	semaphore            yes            lease nodes, the internal lock's nodes yes    leases, internal lock
//	queue                yes            at-least-once: consumer markers (4)    yes    the queue's directory
//	counter (here)       yes            no (the node is the counter)           yes    no (no sequential node)
//	barrier              yes            barrier nodes                          yes    no (no sequential node)
//	double barrier       yes            participant nodes                      yes    each round's directory
//	cache                yes            everything under /cache                yes    no (no sequential node)
//	config               no (1)         no (1)                                 yes    no (no sequential node)
//	election             yes            candidates                             yes    the candidates' directory
//	master               yes            the master node                        yes    no (fixed names)
//	group                yes            member nodes                           yes    no (6)
//	idpersist            yes            candidates (not sequence or limit)     yes    no (6)
//	masterworker         yes            master node, worker registrations (2)  yes    /tasks, the first workers' assignment directories
//	seqid                yes            no (the node is the sequence)          yes    no (no sequential node)
//	bench lock+id        no             no                                     no (3) no (3)
//
// (1) a writer that dies holding the invalid marker can resume only with
// the dead process's task value, and the judge assumes whole
// generations, which an operator's hand edit breaks by design; (2) not
// tasks or assignments: a task's node is the task, and deleting it loses
// it; (3) the figures of bench/README.md were measured without them; (4)
// not items in either mode: an item's node is the item; (5) the lock
// under it is the lock+id scenario's; (6) not yet.
//
// Stats counts, per class, the faults fired and the seeds whose plan had
// the class on.
//
// # The blocking face
//
// World.Go(i, fn) starts fn as an actor: a goroutine of client i that
// calls the blocking APIs (executor.Await, the recipes' Clients) as a
// user's code does, with the actor's context (Actor.Context, or one made
// from it with Actor.WithCancel, WithTimeout on the simulated clock, or
// CancelAfterSteps, which ends it at a later step of the world: at a
// point of the protocol rather than an instant). It runs in lockstep
// with the world: the world never steps while an actor runs, an actor
// runs only when what it waits for is ready (internal/park tells the
// world where the library's blocking calls wait, and on what), one actor
// at a time in the order they were started, and an actor woken by an
// outcome has waited again or returned before the world goes on. A
// context the world ends (a step come, a deadline passed) ends at the
// start of a step, once the actors woken by outcomes have run, and
// outcomes come only from the executors' steps, so no select ever has
// two cases ready: a seed with actors is one history too. The actors of a paused
// process wait for the thaw; those of a crashed one unwind
// (runtime.Goexit) and the Restart hook starts new ones, as the world's
// Close ends the rest.
//
// The blocking scenarios (blocking_sim_test.go in recipes/lock, rwlock,
// semaphore and election) drive each Client from goroutines, two on one
// Client where the doc allows, with contexts that end before the take
// (Acquire, Campaign), during it, just after it, inside the critical
// section, or during the give-back (Release, Resign; Lead's exit), and
// judge them as the task-face scenarios are (fencing log, sim.Leaders)
// and on liveness: once the faults stop every client takes again within
// Recovery, and every hold given back has its Done closed. A give-back
// that does nothing when its context has ended leaves its node until the
// session ends: no client takes again, and the seed fails as liveness
// (on Clients that skip the give-back when the context has ended, seed 1
// of each of the four fails so). recipes/seqid's runs three goroutines on one Client
// (blocks shared between them), judged by unique IDs and by each
// Client's history being linearizable. recipes/group's (Join/Leave, and
// Watch/Next/Stop), recipes/barrier's (DoubleClient Enter/Leave through
// rounds, Client Set/Remove against Wait) and recipes/queue's (Put,
// Take, Ack, each mode, with the counter faults) are judged by the
// checkers of their task-face scenarios, and on quiescence: every member
// left, participant gone, item drained and in-flight copy acknowledged
// or given back, whatever the contexts (seed 1 of each fails so on a
// Leave, Remove or Ack that does nothing once its context has ended).
//
// # Determinism
//
// Everything comes from the seed: the plan and the injections (one PCG
// stream), the workload's Trial.Rand (another), the server's scheduler
// and every executor's randomness (seeded from it by World). Nothing in a
// run reads the wall clock (Stats.Wall, for the report, is measured
// around the runs), no goroutine runs in the simulated path but actors,
// which run one at a time in lockstep with the world, and the
// checkers never let map order show (they sort). Determinism(t, sc,
// seeds) runs each seed twice with the server's trace on and compares the
// trace hashes, the faults injected, the workload's notes and the
// outcome; every package with a scenario runs a sample in its
// TestSimDeterminism, and make sim prints the pairs compared.
//
// # Replay
//
// Check(t, sc, n) runs seeds 1..n and stops at the first that fails,
// reporting from a traced re-run of that seed (the same history); here,
// a report of the lock+id scenario from a run with Delay on:
//
//	sim: lock+id/5 seed 352 FAILED (liveness): no progress within 2m0s ...
//	replay: go test ./fakezk/sim -run '^TestSimExplore$' -sim.seed=352 -v
//	picture: go test ./fakezk/sim -run '^TestSimExplore$' -sim.seed=352 -sim.svg=seed352.svg (an SVG timeline ...)
//	faults drop-unapplied,expire,delay at rate 0.0013; 5.9s simulated, first violation at 5.9s
//	faults injected (13): ...
//	workload notes (last 40 of N): ...
//	trace (last 40 of 5717 events, hash ...; -sim.tail=0 prints all): ...
//
// The flags, registered by this package in every test binary that imports
// it: -sim.seed=N runs only seed N of every Check, traced, and prints its
// history even when it passes; -sim.seeds=N overrides the number of seeds
// of every Check; -sim.tail=K sets how many trace lines are printed (0:
// all); -sim.svg=FILE, with -sim.seed, draws the seed (The picture). Put
// the package before the flags (go test ./pkg -run ... -sim.seed=N): go
// test hands everything after an unknown flag to the test binary.
//
// # The picture
//
// With -sim.svg=FILE, Check draws the seed of -sim.seed as an SVG
// timeline in FILE (RunTimeline records it, Timeline.WriteSVG draws it):
//
//	SIM_SEEDS=1 go test ./fakezk/sim -run '^TestSimExplore$' -sim.seed=1057 -sim.svg=seed1057.svg
//
// go test runs the test binary in the package's directory, so a relative
// FILE lands there (here fakezk/sim/seed1057.svg; the log gives the
// absolute path). A test that checks several scenarios (an Explore of
// two) draws each, the second and later in FILE with the scenario's name
// added (seed1057-counter.svg). A failing seed's report prints the command
// (PictureCommand). Open the file in a browser: every mark has its
// details as a tooltip.
//
// Simulated time runs across, scaled to the run, its axis in ms or s; one
// lane for the server and one per client. On a lane, from the top:
//
//   - the faults of an instant, where they struck: drops (a hollow
//     circle: requests in flight not applied; filled: applied), expiries
//     (a red cross), crash-restarts (a black triangle), operator edits and
//     wipes (a square, a diamond and a dashed line across the lanes, on
//     the server's lane); the tooltip is the fault log's line;
//   - the faults that last, as spans from start to end, packed in rows:
//     partitions (short, long), delays and pauses on the client's lane
//     (ended early by its process's crash), restarts (grey: down; olive:
//     up without a quorum) and clock jumps on the server's, a clock jump
//     also as a blue band across every lane (time that passed while no
//     client ran);
//   - bars, a row per kind (more rows where bars of a kind overlap): each
//     leadership term a Leaders checker judged ("leader", with its
//     token), and whatever the scenario records with World.OpenSpan and
//     CloseSpan, or World.Span: lock holds in the lock+id scenario
//     ("lock"), memberships in recipes/group ("member"), task executions
//     in recipes/masterworker ("task"), time inside a double barrier in
//     recipes/barrier ("barrier"), ID draws in recipes/seqid ("id"),
//     holds of recipes/rwlock by mode. A bar its process's crash ended
//     has a black end, one still open when the run ended a dashed
//     outline, and one whose label the violation's message names ("token
//     1788") a red outline. A scenario adds its bars with a line at each
//     end: bar := r.OpenSpan(i, "lock", label) where the hold begins,
//     r.CloseSpan(bar) where it ends;
//   - as a shade behind, the client's session as it saw it: amber while
//     suspended, red from an expiry to the next session, with a red line
//     where it learned of the expiry (a partitioned or paused client
//     learns late: the cross of an Expire fault and the line can be
//     seconds apart).
//
// Across the lanes, dashed lines mark the phases (faults on, faults off,
// stopping, invariants), and, when the seed failed, a red line marks the
// instant the first violation was recorded (Result.FailedAt: where a
// checker judging as it goes, such as Leaders, saw it; the end of the
// run for an invariant), the message in the header. Labels are drawn
// only where they fit; the rest is in tooltips, so a run of hundreds of
// events stays readable. The same seed draws the same bytes.
//
// Recording costs a run nothing when it is off: every recording call is
// a nil check, and a scenario's OpenSpan and CloseSpan calls return at
// once. This package's TestSimExplore with SIM_SEEDS=1500, four runs of
// the code before the recording was added alternating with four after:
// lock+id/5 139.0 and 139.1 seeds/s, counter 432.5 and 432.3 (means).
// Only RunTimeline records (-sim.svg): it also traces.
//
// fakezk/sim/testdata/timeline.svg is a real seed so drawn: seed 1057 of
// the lock+id scenario with 5 clients, nine classes of faults. In it,
// client 4 is cut off (partition-long, at 5.1s) while its contender node
// is first in the lock's queue, and no client holds the lock until the
// server expires its session, a session timeout later (9.1s); client 3,
// cut off from 3s, is paused and then crashes (9.3s, 9.6s), and its new
// process runs on a new session. The picture
// is drawn again by TestTimelinePicture, which fails when the file is not
// what the code draws now (a change to the seed's history or to the
// drawing); draw it again with
//
//	go test ./fakezk/sim -run '^TestTimelinePicture$' -update
//
// # Canaries
//
// A canary is a known recipe bug that a test switches back on
// (internal/canary) to show the simulation catches it. Catch(t, sc, name,
// hunts, bound) hunts for a failing seed hunts times over disjoint seed
// ranges and fails if a hunt needs more than bound seeds. Measured with
//
//	go test -count=1 -run Canary -v ./recipes/...
//
// on this machine (2 cores shared with other work), seeds to catch over 3
// or 5 hunts (the hunts column) of at most bound seeds each:
//
//	canary                                      hunts  median  worst  bound
//	barrier/trust-event                             3       1      1    500
//	barrier/loss-as-gone                            3       1     10    500
//	barrier/double-blind-create                     3       1      6    500
//	barrier/double-leave-trusts-event               3       1      1    500
//	cache/version-only                              3       1      1    300
//	cache/no-rearm-after-loss                       3      14     31    300
//	cache/no-resync-after-expiry                    3       3      4    300
//	cache/recursive-no-reread-after-reconnect       3       4     18    300
//	cache/recursive-created-is-new                  3       1      2    300
//	config/ignore-invalid-marker                    3       2      9    300
//	config/deliver-intermediate                     3       1      1    300
//	config/reload-no-cancel                         3       1      1    300
//	election/skip-owner-check                       3       2      4    500
//	election/skip-owner-check/master                3       4      5    500
//	election/no-give-up                             3      53     98    500
//	election/watch-lowest                           3       1      3    500
//	group/member-no-reregister                      3       3      6    500
//	group/join-cleanup-after-success                3       1      1    500
//	group/view-no-rearm-after-expiry                3       2      3    500
//	group/view-stale-list                           3       2      2    500
//	idpersist/persist-mod-100                       5       1      1    500
//	idpersist/pass-limit                            5       1      2    500
//	masterworker/assign-two-ops                     3       1      1    500
//	masterworker/submit-no-id                       3       2      4    500
//	masterworker/no-rearm-workers                   3       1      2    500
//	seqid/blind-write                               5       1      1    500
//	seqid/loss-not-applied                          5       5     18    500
//	election/arm-on-change                          1     189    189    500
//	election/queue-exhausted-sequence               1       1      1    500
//	lock/no-unique-prefix                           5      13     29      -
//	lock/watch-lowest                               5       1      1      -
//	lock/connection-loss-is-failure                 5      13     29      -
//	lock/trust-stale-session                        5       1      3      -
//	lock/queue-exhausted-sequence                   5       1      1      -
//	lock/hold-when-any-predecessor-goes             5       2      2      -
//
// 33 canaries, all caught (re-measured with the crash-restart, operator
// and pause classes on) (the lock package logs no bound; the election
// rows with one hunt are from its TestCanaries, which hunts once from seed
// 1). Two more in the lock package, of its fast path of re-acquiring
// (lock/fast-path-after-any-release, lock/fast-path-without-directory-watch),
// need a history the random faults hardly draw (a waiter giving up, a
// directory deleted and created again) and are caught by the directed
// histories of recipes/lock/fast_test.go instead. Two that were
// tried and are not in the table: idpersist/unfenced-leader (a leader
// writing without the check on its candidate node) is never caught by the
// idpersist scenario, whose deposed leaders are also stopped by the
// version checks on the nodes they write; idpersist/blind-store (a
// leader storing its mark without reading the Store) is caught at seed
// 126 only, about one seed in a thousand, and stays as that regression
// seed (TestSimRegressions) rather than a canary.
//
// # The large run
//
// make sim runs every TestSimExplore (skipped unless SIM_SEEDS is set)
// and every TestSimDeterminism, without the race detector. A
// TestSimExplore calls Explore, which runs three sets of seeds of each of
// its scenarios:
//
//   - the regression seeds (Scenario.Regressions): every seed of the
//     scenario that ever failed, with what went wrong; a package's
//     TestSimRegressions replays them in every plain go test too;
//   - the fixed range, seeds 1..SIM_SEEDS, the same on every run;
//   - the drawn range, SIM_SEEDS seeds from DrawnFrom: the Makefile
//     passes the commit under test (SIM_COMMIT, git rev-parse HEAD), and
//     its first 12 hex digits above FixedFrom start the range, so each
//     commit explores seeds no run has tried. Outside a git checkout the
//     range starts at FixedFrom and the report says so; SIM_FROM or
//     -sim.from set the start by hand.
//
// One seed in four of the fixed and the drawn range (RootedSeed) runs
// with every client under a chroot, ExploreRoot (fakezk.ConnConfig.Root;
// Explored says which scenario a seed runs with, also when replayed with
// -sim.seed): the world creates the root (and again after a wipe), the
// recipes run below it, and the world's readers of the server's tree
// (Children, NodeStat, NodeData, Paths, SetCounters, ReadTree, FenceLog,
// FenceTail, the operator) take the clients' paths, so every checker
// reads the same paths either way. Such a seed also fails if a node
// outside the root was left (clients that escaped it would leave the
// checkers nothing to judge). A failing rooted seed is listed in
// Regressions with its Root.
//
// internal/simsum sums them: seeds, the ranges and where the drawn one
// came from, the seeds run under a root, the regression seeds replayed,
// seeds per second of each scenario and overall, seeds per CPU second of
// each scenario (Stats.CPU), safety and liveness failures, faults fired
// per class, determinism pairs. It fails below the Makefile's -min, on
// any failure or mismatch, if a class never fired, or if no seed ran
// under a root. A failing seed of any set is replayed by its -sim.seed
// alone; add it to its scenario's Regressions.
//
// A run of an earlier tree (12 scenarios, before the counter classes,
// twins, the blocking scenarios and busy/4; make sim prints the same
// summary for the tree under test), on 2 cores shared with other work:
//
//	make sim    (SIM_SEEDS=2600)
//	sim total: 62412 seeds over 12 scenarios (lock+id/5=5200 counter=5200
//	  double-barrier=5205 barrier=5200 cache=5200 config=5200
//	  election=5201 master=5202 group=5200 idpersist=5201
//	  masterworker=5203 seqid=5200)
//	sim speed: 289.1 seeds/s per scenario run (sum of the scenarios' own
//	  times, 215.8s); 501.8 seeds/s overall (124.4s elapsed, compilation
//	  and parallel packages included)
//	sim seeds/s per scenario: lock+id/5=102.1 counter=305.7
//	  double-barrier=2030.8 barrier=5377.5 cache=514.1 config=332.2
//	  election=799.9 master=412.2 group=655.6 idpersist=378.4
//	  masterworker=95.7 seqid=221.8
//	sim ranges: fixed 1-2600, drawn 52993391637278-52993391639877 (commit 303240ade91e)
//	sim regression seeds replayed: double-barrier=825,1000000201,93,242,1000000072
//	  election=4505 master=1716,176839657743356 idpersist=126
//	  masterworker=5767,631,1000000108
//	sim failures: 0 safety violations, 0 liveness failures, 0 setup failures
//	sim faults fired: clock-jump=48543 crash-restart=53687 delay=83932
//	  drop-applied=91635 drop-unapplied=88508 expire=94324 operator=35538
//	  partition-long=62853 partition-short=73196 pause=38809
//	  restart=47209 wipe=1850
//	sim determinism: 63 pairs compared, 0 mismatches
//	real 2m4s
//
// # Speed
//
// BenchmarkLockID10: the lock + ID scenario with 10 clients, 10 simulated
// seconds of workload under faults plus recovery, one seed per iteration:
//
//	GOMAXPROCS=1 go test -run '^$' -bench LockID10 -benchtime 200x -cpu 1 -count 3 ./fakezk/sim
//	BenchmarkLockID10  200  16142402 ns/op  61.95 seeds/s
//	BenchmarkLockID10  200  15173975 ns/op  65.90 seeds/s
//	BenchmarkLockID10  200  13707688 ns/op  72.95 seeds/s
//
// (load average about 5 from other work on the 2 cores.)
package sim

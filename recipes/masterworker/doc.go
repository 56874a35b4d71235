// Package masterworker assigns tasks to workers through ZooKeeper:
// masters run for mastership (one primary, backups waiting), workers
// register and execute what is assigned to them, and clients submit tasks
// and wait for their status. It is the master-worker example of the
// ZooKeeper book, made safe under connection loss, session expiry and
// failover; neither Curator nor kazoo has a counterpart.
//
// Whatever the faults: no task is in two places (in /tasks and assigned,
// or assigned to two workers) at any time; no submitted task is lost; a
// task gets at most one status; a submission whose reply was lost is not
// made twice. Every move is one multi fenced by the primary's lease, and a
// dead worker's tasks are moved back. Once the faults stop and a primary
// and a worker are up, every task gets its status.
//
//	sys, err := masterworker.New("/app/jobs")
//	m, err := sys.Master("master-1") // run several: one primary, the others wait
//	go m.Serve(ctx, ex)
//	w, err := sys.Worker("worker-1", func(j masterworker.Job) task.Task[[]byte] {
//		return task.Value(bytes.ToUpper(j.Data))
//	})
//	go w.Serve(ctx, ex)
//	c, err := sys.NewClient(ex, "client-1")
//	res, err := c.Do(ctx, []byte("hello")) // submitted once, done once: one status per task
//
// To compose with other tasks, use the task face: System's Submit, Wait
// and Status, and Master.Run and Worker.Run, return task.Task values to
// run on an executor yourself; Client, Master.Serve and Worker.Serve run
// them and wait.
//
// It builds on recipes/election (the /master node) and recipes/cache (the
// primary's view of /workers).
//
// Start reading at System (layout.go), then Master.Run (master.go),
// Worker.Run (worker.go), Submit and Wait (client.go); Serve and Client
// (blocking.go) are the blocking API. The option WithACL sets the ACL of
// every node the system creates (task.OpenACL by default).
//
// # Node layout
//
// Under a root of the user's choosing (System.Root):
//
//	<root>/master                  ephemeral; the primary master's (recipes/election's Master)
//	<root>/master.leases/<id>      ephemeral; the primary's lease, made with /master in one multi that deletes the others
//	<root>/workers/<worker>        ephemeral; a live worker's registration
//	<root>/tasks/<task>            persistent; a task not yet assigned, data = the client's data
//	<root>/assign/<worker>/<task>  persistent; a task assigned to <worker>, same data
//	<root>/status/<task>           persistent; the task's result ('o' + value, or 'e' + error message)
//
// A task's name is task-<submission id>-<sequence>, given by the server
// at submission and kept through every move. The one invariant that
// makes the rest simple: a task is in at most one of /tasks and
// /assign/*, and in neither once it has a status. Every move is one
// multi, so ZooKeeper applies both halves or neither.
//
// # Client: Submit, Wait
//
//  1. Create <root>/tasks/task-<id>- persistent-sequential, where id is
//     unique per submission (Client uses its own id and a counter).
//     Missing directories (ErrNoNode): run Setup, create again.
//     Not sent (ErrNotSent): create again.
//     Connection loss (the create may or may not have been applied): Find
//     the id in /tasks, then in every /assign/<worker>, then in /status
//     (the master and a worker may have moved the task already); found
//     means submitted, not found means create again. A task moved back
//     from a dead worker into /tasks between those reads would be missed,
//     so Find lists /tasks again at the end: the task is there, or /tasks
//     is the same incarnation (czxid) with the same pzxid (nothing left
//     it), or Find starts over. (Listing again, not only comparing the
//     pzxid: once the counter has run out a create no longer moves it.)
//     A missing /tasks is made again before it is read. So a lost reply
//     never submits twice.
//     Session expiry or a canceled scope while the create is in flight:
//     the outcome is unknown; Resubmit with the same id (Find first) is
//     the way to go on, and Client.Submit does it by itself.
//  2. Wait: exists with a watch on <root>/status/<task>. There already:
//     read it. Not yet: wait for the watch (it fires on creation), then
//     exists again. Connection loss on a read is retried after the
//     reconnect; a watch that ends with the session gives
//     task.ErrSessionExpired (waiting has no side effect: run it again,
//     as Client.Wait does).
//
// # Worker: Run
//
//  1. Setup, then create <root>/assign/<worker> (persistent; one that
//     exists is fine) before registering, so a master never sees a
//     registered worker without an assignment directory.
//  2. Register: create <root>/workers/<worker> ephemeral. Node exists or
//     connection loss: read the node; ours (the owner is our session) is
//     registered, missing means create again, another session's (an
//     earlier incarnation whose session has not expired yet, or a node
//     an operator made) means wait for it to go with an exists watch,
//     then create again. Once registered, a keeper flow follows the node
//     with an exists watch for as long as the session lives: if it is
//     gone, or is not our session's, the worker is not registered any
//     more and goes through steps 1 and 2 again (see Faults below). The
//     keeper runs beside step 3, which it never stops.
//  3. List <root>/assign/<worker> with a child watch; execute each
//     assignment in name order, one at a time; wait for the watch (or a
//     reconnect of the session); list again. If the directory is gone (a primary whose list of workers
//     predates our registration took it for a dead worker's and removed
//     it), make it again and list again.
//  4. Execute one assignment: read its data (gone: skip it, it was moved
//     away); run the Handler; write the status with one multi {create
//     <root>/status/<task>, delete <root>/assign/<worker>/<task>}.
//     Connection loss: run the multi again. Its outcomes: success; the
//     delete fails with no node (our multi was applied before its reply
//     was lost, or the primary moved the task away because it thought us
//     dead: nothing is written, the task runs again elsewhere and that
//     run writes the status); the create fails with node exists (a status
//     is there: drop the stale assignment). A handler that fails with
//     task.ErrSessionExpired, ErrClosed or ErrCanceled stops the worker
//     and leaves the assignment for the primary; any other handler error
//     is written as a failed status (Result.Failed).
//
// What "once" means: the status is written exactly once per task (the
// multi cannot create it twice, and cannot create it once the task was
// moved away), and the client reads that one result. The handler runs at
// least once: a worker that crashes, or is taken for dead, after running
// the handler and before its multi is applied, leaves the task to be
// executed again by another worker. Handlers with external side effects
// must therefore be idempotent (key them on Job.Name).
//
// # Master: Run
//
//  1. Setup, then campaign for <root>/master with recipes/election's
//     Master (an ephemeral node; connection loss on the create is settled
//     by reading the node's owner; backups wait on an exists watch).
//  2. As primary, in rounds. Each round:
//     a. take the live workers from the term's ChildrenCache of
//     <root>/workers (recipes/cache: it lists with a child watch,
//     re-arms the watch after every notification, repeats a listing
//     that failed with connection loss since a failed call sets no
//     watch, and wakes the primary at each consistent snapshot); if the
//     /tasks watch fired (or none is set), or the session reconnected
//     since the last list, list <root>/tasks with a new child watch,
//     retrying connection loss likewise (a /tasks that is gone is made
//     again);
//     b. list <root>/assign; for every directory whose worker is not in
//     /workers, move each of its tasks back with one multi {check
//     the primary's lease, delete the assignment, create <root>/tasks/<task> with the
//     same name and data}, then delete the directory if it is empty;
//     c. assign every task in /tasks to a live worker, round robin, each
//     with one multi {check the primary's lease, create
//     <root>/assign/<worker>/<task>, delete <root>/tasks/<task> at the
//     version read};
//     d. wait until a watch fires, then start the next round.
//     The check on the primary's lease (election's Leadership.Fenced)
//     makes ZooKeeper refuse the moves of a primary that lost mastership,
//     however late they arrive: every new primary deletes the leases in
//     the multi that makes it primary, so the check fails once anyone
//     else is primary, even though /master itself is back at version 0
//     (a check on /master would pass for every primary). A move that fails because a node is missing or
//     present (another master moved the task, the worker's directory is
//     gone), or whose reply was lost, is settled by the next round's
//     reads, which run again shortly (100ms) without waiting for a watch.
//  3. On becoming primary the first round reads everything, so a new
//     primary reconciles what the last one left: unassigned tasks are
//     assigned, the tasks of workers that died meanwhile are moved back.
//     No "in progress" state needs disambiguating: each task is in
//     exactly one place.
//  4. When the leadership ends (the session suspended for too long, the
//     node gone) the term ends at its next step and the master campaigns
//     again; when the session expires, Run fails with
//     task.ErrSessionExpired and Serve runs it again on the new session.
//
// # Guarantees
//
// Safety, whatever the faults: no task is in two places (in /tasks and
// assigned, or assigned to two workers) at any time; no submitted task is
// lost (it is always in /tasks, an assignment directory or /status); a
// task gets at most one status; a submission whose reply was lost is not
// made twice. Liveness, once the faults stop and a primary and a worker
// are up: every task gets its status. The simulation (sim_test.go) checks
// each of these at every change of the tree, over many seeds, under
// connection drops (applied and not), partitions, expiries, delays,
// server restarts and clock jumps, with masters failing over and workers
// crashing and restarting, processes paused past their session timeout,
// an operator deleting (and creating again) the master node, its
// leases and the workers' registrations, the counters of /tasks and of
// assignment directories set near their maximum and those directories
// deleted while empty (go test -run TestSimSafety
// -sim.seeds=N runs N seeds; operator_test.go drives the operator's
// deletion of a registration directly);
// real-server tests repeat the end-to-end checks on a standalone server
// and on an ensemble that loses its leader.
//
// # Faults
//
// Crash and restart with the same worker id: the dead process's session
// and its registration live until the server expires them; the new
// process waits for that node to go (step 2), then registers. The master
// meanwhile takes the old node for a live worker and leaves the worker's
// assignments where they are; if a round of the master sees the node gone
// before the new one is made, it moves them back to /tasks, else the new
// process runs them.
//
// An operator deletes a worker's registration: the worker's keeper
// (step 2) sees it gone and registers again, assignment directory first;
// the master, whose cache of /workers sees the node go and come back,
// moves the worker's tasks back to /tasks meanwhile (if its round runs in
// between) and assigns to the worker again once it is back. Until the
// node is back the worker runs what is still assigned to it (a task the
// master has moved away fails its status multi, as for a worker taken for
// dead). An operator who deletes the registration and creates a node at
// its path again (of any other session, or persistent) leaves the worker
// unregistered (Registered is false) and waiting for that node to go, as
// for an earlier incarnation's; the master takes that node for the
// worker's and assigns to it, and the worker runs those tasks, so tasks
// still get their status. ErrWorkerTaken is returned only if that wait is
// cut short (the scope ends). A persistent node there never goes by
// itself: the worker stays unregistered until someone deletes it.
//
// # Task names and the tasks directory's counter
//
// Task names come from the counter of <root>/tasks (the sequence number
// the server appends), but each carries its submission's id, so names
// are unique whatever the counter hands out. Nothing is ordered by the
// number, and no task is told from another by it.
//
// After an empty directory is deleted (an operator cleaning up), every
// participant makes it again where it needs it: the primary makes /tasks
// again when its list of /tasks finds it gone, and goes on serving (a
// dead worker's assignment directory found gone has nothing to move
// back);
// Submit runs Setup when its create finds it gone; Find makes it again
// before it reads it; a worker makes its assignment directory again
// (Worker, step 3). The counter of the new /tasks starts at 0 again, so
// numbers handed out before are handed out again; with the submission's
// id in every name, that gives no name twice.
//
// At the counter's wrap (2^31-1 creates under /tasks), ZooKeeper keeps
// naming every new task ...2147483647 (or, for a create prepared while
// another is in flight, with a negative number); names stay unique by
// their ids, and Find recognises both forms. The server then no longer
// moves the pzxid of /tasks when a child is created, so a child watch
// whose notification was lost with the connection is not fired again on
// reconnect (SetWatches compares the pzxid): the primary lists /tasks
// again after every reconnect, and Find lists it again rather than
// compare its pzxid. An assignment directory counts every assignment
// and status too; a worker lists its assignments again after every
// reconnect for the same reason. The counter restarts only if /tasks is deleted
// while empty; the recipe goes on without that.
//
// # Measured
//
// On 2026-11-22, one standalone ZooKeeper server started by the tests on
// the same 2-CPU virtual machine (amd64), shared with other jobs, with
//
//	ZK_REQUIRED=1 go test -count=3 -run '^$' -bench BenchmarkRealThroughput -benchtime 3000x ./recipes/masterworker
//
// (one master, four workers whose handler returns at once, two clients
// submitting from 8 goroutines each with Client.Do, every participant on
// its own session and executor; 3000 tasks per run): 370, 438 and 428
// tasks/s. Each task is three writes (the submission, the assignment
// multi, the status multi) and about ten requests in all; the figure is
// bounded by round trips, not by the client's CPU (the test process used
// under a tenth of a CPU in a profiled run). An earlier run the same day
// with the machine's load average near 17 gave 212 tasks/s.
//
// # Threads
//
// Every task runs on its executor's goroutine, and so do handlers. The
// accessors Master.Primary, Master.Stats, Worker.Registered and
// Worker.Completed, and everything in blocking.go, are safe from any
// goroutine.
package masterworker

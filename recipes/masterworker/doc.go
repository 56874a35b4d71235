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
// and a worker are up, every task gets its status. The faults are the
// network's, the processes' and the servers', and an operator's deletes of
// the master node, its leases, the workers' registrations and empty
// directories (PROTOCOL.md); an operator who deletes a task's own node
// (in /tasks, an assignment or a status) deletes the task: a worker
// running it writes no status, and a Wait for it waits until its ctx
// ends (Find then finds nothing; Resubmit submits it again).
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
// The option WithACL sets the ACL of every node the system creates
// (task.OpenACL by default).
//
// Under a root of the user's choosing (System.Root) the system keeps
// <root>/master and its leases, <root>/workers/<worker> (ephemeral, a live
// worker), <root>/tasks/<task> (not yet assigned), <root>/assign/<worker>/<task>
// (assigned) and <root>/status/<task> (the result). A task is in at most
// one of /tasks and /assign/*, and in neither once it has a status; every
// move is one multi, so ZooKeeper applies both halves or neither.
//
// # Threads
//
// Every task runs on its executor's goroutine, and so do handlers. The
// accessors Master.Primary, Master.Stats, Worker.Registered and
// Worker.Completed, and the blocking API (Serve, Client), are safe from
// any goroutine.
//
// The node layout, the client's, worker's and master's protocols, the
// guarantees and why they hold, the fault table and the measured
// throughput: recipes/masterworker/PROTOCOL.md.
package masterworker

// Package barrier is ZooKeeper's barrier and double barrier recipes: a
// barrier holds every waiter while its node exists; a double barrier lets
// N participants enter together and leave together. They are the
// counterparts of Apache Curator's DistributedBarrier and
// DistributedDoubleBarrier and of kazoo's Barrier and DoubleBarrier.
//
// Wait returns only once the barrier has been removed (after an exists
// that found no node). A participant passes Enter only after some
// participant listed N participant nodes, at most one per Enter; Leave
// returns only once every participant node made before it started is
// gone: each participant that had entered, or was entering, has left
// (deleted its node) or lost its session. Every wake-up is only a hint: the
// condition is checked again after each one. A failed Enter leaves no
// participant node, and if Leave ends early a cleanup still deletes its
// node: DoubleClient.Leave deletes it whatever its ctx, even one that has
// ended (it then returns ctx's error at once). A DoubleClient's Enter
// first waits for the cleanup of its own failed Enter and for the delete
// of its own Leave, so one DoubleClient never has two participant nodes
// at once (they would count twice).
//
//	gate, err := barrier.NewClient(ex, "/app/deploy")
//	err = gate.Set(ctx, nil) // one process holds the others...
//	err = gate.Wait(ctx)     // ...which wait here until it calls gate.Remove(ctx)
//
//	round, err := barrier.NewDoubleClient(ex, "/app/rounds/42", 3)
//	p, err := round.Enter(ctx) // waits until 3 participants have entered
//	if err != nil {
//		return err
//	}
//	// ... the round's work, with the others ...
//	return round.Leave(ctx, p) // waits until all 3 have left
//
// To compose with other tasks, use the task face: New returns a Barrier
// whose Set, Wait and Remove, and NewDouble a DoubleBarrier whose Enter
// and the Participant's Leave, are task.Task values to run on an executor
// yourself; Client and DoubleClient run them and wait.
//
// The option WithACL sets the ACL of every node a barrier creates
// (task.OpenACL by default).
//
// Every operation is retried past connection loss (after the reconnect)
// and past "not sent". When the session ends, Wait fails with
// task.ErrSessionExpired or task.ErrClosed (Client.Wait waits again on
// the next session). If a participant's node is deleted by someone else
// during Enter, Enter fails with ErrParticipantLost: enter again. Other
// errors: the scope's (task.ErrDeadlineExceeded, task.ErrCanceled,
// matching the context errors under errors.Is), task.ErrDataTooLarge
// (Set), an *task.OpError that a retry cannot settle (task.ErrNoAuth,
// say); constructors refuse an invalid path, the root or a path under
// /zookeeper (task.ErrInvalidPath), and N < 1, a nil executor or Leave of
// a nil participant (task.ErrInvalidArgument); the calls of Client and
// DoubleClient refuse a nil ctx (executor.ErrNilContext).
//
// A directory serves one round: ready stays after the round (a late
// participant passes at once). Use a new directory per round, e.g. one
// named after the round; delete old ones when every participant has left.
//
// The protocols, what an operator's deletes do, and the tests:
// recipes/barrier/PROTOCOL.md.
package barrier

package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/task"
)

// The recipe scenarios: the read-write lock, the semaphore, the lock's
// try, the queue and the election, each against the Curator recipe it replaces (and
// kazoo's). They are the group "recipes": not in -scenarios all, and their
// results go to the README section "recipes" (make bench: -scenarios
// recipes -out bench/results-recipes). The peers implement the
// same names (CuratorPeer.java and RecipePeers.java, kazoo_peer.py) with
// the same rules: the write share of rwlock (rwWrite), the leases of
// semaphore (semLeases), an operation of queue (a put, then a take).

const (
	// rwWrite: a client's round-th operation is a write when
	// (client + round) % rwWrite == 0: 1 write per 4 reads.
	rwWrite = 5
	// semLeases is the semaphore's number of leases.
	semLeases = 2
)

// queueItem is the data of every item the queue scenario puts.
var queueItem = []byte("zkbench-item-16b")

func init() {
	recipePeers := []peers.Kind{peers.Curator, peers.Kazoo}
	const g = "recipes" // -scenarios recipes; not in all
	register(&scenario{
		Name: "rwlock", Title: "read-write lock, 1 write per 4 reads (recipes/rwlock Client)", Unit: "acquisitions/s",
		// Not kazoo: 2.8's ReadLock and a WriteLock queued after it wait
		// for each other (python-zk/kazoo#649; fixed after 2.8).
		Clients: []int{1, 4, 16}, Peers: []peers.Kind{peers.Curator}, Run: rwlockRun, Group: g,
	})
	register(&scenario{
		Name: "semaphore", Title: fmt.Sprintf("semaphore of %d leases, acquire+return (recipes/semaphore Semaphore)", semLeases), Unit: "leases/s",
		Clients: []int{1, 4, 16}, Peers: recipePeers, Run: semaphoreRun, Group: g,
	})
	register(&scenario{
		Name: "trylock", Title: "lock tries, released when won (recipes/lock Client.TryAcquire)", Unit: "tries/s",
		Clients: []int{1, 4, 16}, Peers: recipePeers, Run: tryLockRun, Group: g, Share: "tries won",
	})
	register(&scenario{
		Name: "queue", Title: "queue put then take, every client a producer and a consumer (recipes/queue Client)", Unit: "items/s",
		Clients: []int{1, 4, 16}, Peers: recipePeers, Run: queueRun, Group: g,
	})
	register(&scenario{
		Name: "election", Title: "leadership terms: campaign until leading, then step down (recipes/election Campaign)", Unit: "terms/s",
		Clients: []int{1, 4, 16}, Peers: recipePeers, Run: electionRun, Group: g,
	})
}

// rwlockRun: each client loops acquire + release of one read-write lock,
// its round-th time the write lock when (client + round) % rwWrite == 0,
// the read lock otherwise.
func rwlockRun(ctx context.Context, r runSpec) (measured, error) {
	next := 0
	return perClient(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
		ops, err := oursRWLock(ex, r.Path)
		if err != nil {
			return nil, err
		}
		client, round := next, 0
		next++
		return func(ctx context.Context) error {
			write := (client+round)%rwWrite == 0
			round++
			if write {
				return ops.Write(ctx)
			}
			return ops.Read(ctx)
		}, nil
	})
}

// semaphoreRun: each client loops acquire + return of a lease of one
// semaphore of semLeases leases.
func semaphoreRun(ctx context.Context, r runSpec) (measured, error) {
	return perClient(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
		return oursSemaphore(ex, r.Path, semLeases)
	})
}

// tryLockRun: each client loops one try of one lock, releasing it when
// won. An operation is a try; Holds counts the tries won over the whole
// run (warm-up included, as Total counts the tries). Once the load has
// ended, the lock's directory must be empty: a try that lost leaves no
// node behind (the recipe's promise), and every win was released.
func tryLockRun(ctx context.Context, r runSpec) (measured, error) {
	var won atomic.Int64
	m, err := perClientThen(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
		try, err := oursTryLock(ex, r.Path)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			ok, err := try(ctx)
			if ok {
				won.Add(1)
			}
			return err
		}, nil
	}, func(ctx context.Context, execs []*executor.Executor) error {
		return leftBehind(ctx, execs[0], r.Path)
	})
	m.Holds = won.Load()
	return m, err
}

// errLeftBehind: a scenario found nodes left in its directory after its
// load ended.
var errLeftBehind = errors.New("nodes left behind")

// leftBehind fails when dir has children.
func leftBehind(ctx context.Context, ex *executor.Executor, dir string) error {
	kids, err := executor.Await(ctx, ex, task.Children(dir))
	if err != nil {
		return fmt.Errorf("listing %s after the run: %w", dir, err)
	}
	if len(kids.Names) > 0 {
		return fmt.Errorf("%w: %d under %s after the run: %v", errLeftBehind, len(kids.Names), dir, kids.Names[:min(len(kids.Names), 5)])
	}
	return nil
}

// queueRun: each client loops a put of one item and then a take of one
// item (any client's: the queue's head), so every client is a producer
// and a consumer and the queue never holds more items than there are
// clients; a take waits only while others hold every item put. An
// operation is one put and one take: one item through the queue.
func queueRun(ctx context.Context, r runSpec) (measured, error) {
	return perClient(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
		q, err := oursQueue(ex, r.Path)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			if err := q.Put(ctx, queueItem); err != nil {
				return err
			}
			data, err := q.Take(ctx)
			if err == nil && len(data) != len(queueItem) {
				err = fmt.Errorf("took %d bytes, put %d", len(data), len(queueItem))
			}
			return err
		}, nil
	})
}

// electionRun: each client loops a campaign in one election until it
// leads, then steps down: an operation is one leadership term, and with
// more than one client each ends in a handoff to the next candidate.
func electionRun(ctx context.Context, r runSpec) (measured, error) {
	return perClient(ctx, r, func(ex *executor.Executor) (func(context.Context) error, error) {
		return oursElection(ex, r.Path)
	})
}

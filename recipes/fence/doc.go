// Package fence makes a lock honest for writes that go to a store outside
// ZooKeeper: any key/value store with a compare-and-swap. The store keeps,
// beside each value, the fencing token of the holder that wrote it, and a
// write goes through only if the stored token is not above the writer's,
// checked and applied in one compare-and-swap of the store's own. A holder
// that was paused (garbage collection, a stopped VM) past its session
// timeout, lost its lock while frozen and wakes up writing is refused by
// the store once a newer holder has written the key.
//
// recipes/lock's Fenced (Client.Fenced, Held.Fenced) does this for
// writes to ZooKeeper itself (a multi with a check on the lock node).
// Most critical sections write elsewhere; this package is for them.
// Neither Curator nor kazoo has a counterpart.
//
//	locks, err := lock.NewClient(ex, "/app/config-lock")
//	held, err := locks.Acquire(ctx)
//	if err != nil {
//		return err
//	}
//	defer locks.Release(ctx, held)
//	err = fence.Write(ctx, store, "config", held.Token(), value)
//	if errors.Is(err, fence.ErrFenced) {
//		// a newer holder has written "config": this hold is over
//	}
//
// To compose with other tasks, use the task face: WriteTask, UpdateTask,
// ReadTask and DeleteTask are the same calls as tasks, over a TaskStore
// (see Blocking calls and tasks).
//
// Start reading at Store (fence.go), then Write, Update and Read
// (write.go) and the attempt they share (attempt.go). Memory is a Store in
// memory; recipes/fence/boltstore is one on a database file (bbolt);
// recipes/fence/fencetest checks a Store you write.
//
// # Where the token comes from
//
// A token must grow from one holder to the next, and a holder's token must
// be the same in every write of its hold. What exists in this module:
//
//   - recipes/lock: Held.Token, the lock node's czxid;
//   - recipes/election: Leadership.Token (Election and Master), the
//     czxid of the leader's node.
//
// Both are positive and strictly increase from one holder to the next
// (see those packages); zxids are ordered across the whole ensemble, so
// tokens of different locks on one ensemble compare too. A lease of
// recipes/semaphore has a token too, but up to N leases are held at once,
// so its tokens do not order holders: the fence is not for them.
//
// # The guarantee
//
// On each key, the writes the store accepts carry tokens that never go
// down. So once a holder has written a key (or claimed it with Read), no
// holder with a lower token writes it again: every write of a former
// holder that arrives later is refused with a *FencedError (errors.Is
// ErrFenced), and the store is unchanged. A write is refused only when a
// higher token has written the key: a holder's own writes, however many,
// are never refused for being its own.
//
// # What it does not guarantee
//
// The fence sees only what has reached the store. A former holder's write
// that arrives after its lock was taken over, but before any newer holder
// has written or claimed that key, is accepted. To the key this is the
// same as a write the former holder made while it held the lock and that
// was slow on the way: the key's writes are still in token order, holder
// after holder, and a newer holder that then writes is after it. It is
// safe on two conditions, which a user must meet:
//
//   - Read what you act on through Read or Update, not through the
//     store's own Load. Read claims the key (raises its token to yours,
//     value unchanged: one write per holder and key, the first time), so
//     from then on no former holder writes it. Update loads and writes in
//     one compare-and-swap, so a late write landing in between makes the
//     compare-and-swap fail and the update runs again on it. A Load
//     followed by a Write could instead overwrite the late write with a
//     value computed from what it replaced: a lost update.
//   - Put what must change together under one key. The fence is per key:
//     a former holder's section may be cut, its writes to the keys no
//     newer holder has written yet accepted and the others refused. That
//     is the state its section leaves if the holder crashes midway, which
//     a critical section has to survive anyway; what must be all or
//     nothing belongs in one value, written with one Update.
//
// And two rules of upkeep: never remove a key's entry or lower its token
// by other means than this package (Delete keeps the token; a key with no
// entry accepts any token); and the tokens of one ZooKeeper ensemble do
// not compare with another's: an ensemble that lost its data starts its
// zxids again from zero, and every new holder is then refused (the safe
// way round) until the store's entries are reset by hand.
//
// A refused holder has lost its lock (a higher token exists only once a
// newer holder took it): end the section and release. A failed
// compare-and-swap (an *OpError) leaves the outcome unknown, as a lost
// reply does in ZooKeeper: a Write may be repeated with the same token; an
// Update that is not idempotent (an increment) may then apply twice.
//
// # One primitive: compare-and-swap on a version
//
// A Store implements two calls: Load(key), giving the entry and a
// version, and CompareAndSwap(key, version, entry), replacing the entry if
// the version is still the one loaded. The rule (which token may write)
// is in this package, written once and tested once, not in each store:
// the bugs of a fence are in that rule (a < for a <=, a check not covered
// by the write), and a store that only compares versions cannot have them.
// Versions are what stores have: a row counter in SQL (UPDATE ... WHERE
// key = ? AND version = ?), etcd's ModRevision in a transaction, an ETag
// with If-Match, DynamoDB's condition expressions, bbolt's or SQLite's
// transactions. A single conditional put ("write if the stored token is
// <= mine") would save a round trip on stores that can evaluate it, but
// each store would carry the rule; Update's read-modify-write needs the
// version anyway. The version type is the store's (Store[V]); the fence
// never looks inside it.
//
// A Store must change a key's version at every write and never give a
// version back (no ABA: do not delete entries and start counting again).
// CompareAndSwap may report false only when the version changed since the
// Load (another write went through): Write, Update and Read load again and
// check again after a lost compare-and-swap, and make progress because
// each loss is someone else's write.
//
// # Protocol and proof
//
// An operation by token t on key k: load k, giving entry (x, s) at
// version v. If s > t, refuse. Otherwise compute the new value y (Write:
// the value; Update: fn(x); Read: x, and nothing to do if s >= t) and
// compare-and-swap (y, t) at version v; if it fails, start again.
//
// The stored token never goes down, and equals the highest token
// accepted: the compare-and-swap of (y, t) applies only while k is still
// at version v, that is (no version comes back) while the stored token is
// still s <= t, and it stores t. So a write by t is accepted only if no
// token above t was accepted before it on k: in the store's order, the
// accepted tokens never go down. A refusal happens only on a load that
// showed s > t, a token that was accepted. The check and the write are the
// same compare-and-swap's: a write by a newer holder that lands between
// the load and the compare-and-swap changes the version, the
// compare-and-swap fails, and the next load sees the newer token.
//
// # Blocking calls and tasks
//
// Write, Update, Read and Delete block the calling goroutine (call them
// from your critical section, not from a task). WriteTask, UpdateTask,
// ReadTask and DeleteTask are the same attempt as tasks, over a
// TaskStore whose operations are tasks, for critical sections written as
// task chains on an executor (and for the simulation).
//
// # Tests and figures
//
// fencetest (run on Memory and on boltstore) checks the Store contract,
// each rule above call by call, a newer holder's write landing between a
// former holder's load and compare-and-swap (refused), and 8 goroutines
// with their own tokens appending to one key (the log they build never
// goes down in token, no accepted update is lost, every refusal names a
// higher token that wrote). TestPausedHolder (pause_test.go) runs the
// guarantee and its limit on simulated clients: a holder frozen past its
// session timeout, whose lock a second client takes, is refused after
// that client wrote or claimed the key, and accepted when it did neither.
//
// The simulation (sim_test.go; fakezk/sim, every fault class but wipe,
// pause included) runs 4 clients taking a recipes/lock lock and writing to
// a simulated store (internal/simstore: its operations take 1-20ms each
// way on the simulated clock, interleave as the seed decides, and are
// recorded). A holder whose section failed with its session writes once
// more with its old token. Judged on the store's history: on every key
// the accepted tokens never go down; every refusal names a higher token
// that wrote the key and comes to a holder whose lock node is gone; no
// increment of a counter key is lost; every client completes a section
// once the faults stop. In 100 seeds (go test -run '^TestSim$' -v): 2799
// sections completed, 10 refused by the fence, 24 late writes refused and
// 3 accepted (no newer holder had written), 9 refusals to a process that
// had been paused. SIM_SEEDS=2000 go test -run '^TestSimExplore$'
// ./recipes/fence: 4000 seeds, 1000 under a root, no failure, 816 seeds/s;
// with SIM_SEEDS=10000 and SIM_COMMIT set (a drawn range of its own):
// 20000 seeds, no failure, 315 seeds/s (2 cores shared with other work),
// 6485 pauses fired.
//
// Canaries (TestCanaries, 3 hunts of at most 500 seeds; seeds to catch,
// median and worst): writing without the token check
// (fence/no-token-check) 3 and 5; refusing an equal token, < for <=
// (fence/refuse-equal) 1 and 1; checking the token on the first load
// only, so that after a lost compare-and-swap the write is not covered by
// a check (fence/check-outside-cas) 5 and 37.
package fence

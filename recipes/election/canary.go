package election

import "github.com/zkflow/zkflow/internal/canary"

// Known bugs the simulation must catch (see internal/canary). Each is
// switched on only by tests.
const (
	// bugSkipOwnerCheck: grant leadership (and settle a lost create reply)
	// on the name alone, without checking that the node's ephemeral owner
	// is the current session.
	bugSkipOwnerCheck canary.Name = "election/skip-owner-check"
	// bugNoGiveUp: keep leading while disconnected until the expiry is
	// observed, instead of giving up after the GiveUp fraction (WithGiveUp) of the timeout.
	bugNoGiveUp canary.Name = "election/no-give-up"
	// bugWatchLowest: every waiting candidate watches the lowest node
	// instead of its predecessor (a herd on every change of leader).
	bugWatchLowest canary.Name = "election/watch-lowest"
	// bugArmOnChange: arm the give-up timer only when the state changes
	// to Uncertain, so a suspension that comes after a reconnect but
	// before the recheck has restored Leading never gives up.
	bugArmOnChange canary.Name = "election/arm-on-change"
	// bugExhaustedSeq: a candidate whose sequence number is exhausted
	// (the directory's counter ran out: see zkops.Exhausted) queues like
	// any other; candidates then tie at 2147483647 and a newcomer can sort
	// ahead of the leader.
	bugExhaustedSeq canary.Name = "election/queue-exhausted-sequence"
	// bugReplaceSibling: a Master campaign whose create's reply was lost,
	// finding the master node its session's and its own lease missing,
	// takes the node for its own orphan and deletes it, also when another
	// campaign of the session leads with it (that campaign's lease
	// vouches for it).
	bugReplaceSibling canary.Name = "election/master-replace-sibling"
	// bugSiblingShares: a Master campaign that finds the master node its
	// session's takes it for its own without its lease vouching for it,
	// so a second campaign of the session leads beside the one that made
	// it (on the same node, with the same token).
	bugSiblingShares canary.Name = "election/master-sibling-shares-node"
	// bugGrantWithoutSync: an Election candidate lists the candidates,
	// and reads its own node before it leads, without a sync: on a server
	// that lags it can lead on a node someone has deleted (and an
	// operator made again at its path).
	bugGrantWithoutSync canary.Name = "election/grant-without-sync"
	// bugUnversionedMulti: a Master campaign's multi does not check and
	// move the lease directory's version: a lease its listing missed (one
	// created after the listing, by a campaign that led and whose master
	// node an operator then removed; or one a member lagging behind the
	// leader had not applied) survives its multi, and that deposed
	// master's fenced writes pass beside the new master's.
	bugUnversionedMulti canary.Name = "election/master-unversioned-multi"
	// bugResignDeletesAny: a Master's give-back whose multi fails (its
	// lease gone, or the node moved) deletes the master node at any
	// version rather than only the incarnation it made: the node of the
	// campaign that leads since (another session's) goes with it.
	bugResignDeletesAny canary.Name = "election/master-resign-deletes-any"
	// bugLeadContextErrorFails: Client.Lead takes a lead function that
	// returns its own context's error, once the leadership (or Lead's
	// ctx) has ended, for lead failing: with Requeue it stops
	// campaigning and returns context.Canceled although its ctx is live.
	bugLeadContextErrorFails canary.Name = "election/lead-context-error-fails"
	// bugRecheckAnyRead: a leader that reconnects resumes Leading on the
	// reply of any recheck, also one read before a later suspension: its
	// continuation, held while the connection was down again, restored
	// Leading after a reconnect beside another candidate elected meanwhile.
	bugRecheckAnyRead canary.Name = "election/recheck-any-read"
	// bugCleanupUnsynced: a Master campaign that ends without leading
	// reads the master node without a sync before its cleanup: after a
	// lost reply, on a member that has not applied its multi, it sees no
	// node, deletes its lease alone and leaves the node its multi made,
	// of a live session and vouched for by no lease: nobody leads until
	// that session ends.
	bugCleanupUnsynced canary.Name = "election/master-cleanup-unsynced"
	// bugRecheckUnsynced: a leader back from a short cut rechecks its node
	// with a plain read: on a member that has not applied an operator's
	// delete of the node made while it was away, it resumes Leading beside
	// the candidate granted meanwhile.
	bugRecheckUnsynced canary.Name = "election/recheck-unsynced"
)

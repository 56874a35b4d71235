// Package election is leader election on ZooKeeper as task chains, with a
// context-first blocking API on top: Election (ephemeral-sequential
// candidates, each watching only the next lower one) and Master (the
// simpler "/master" pattern).
//
// Start reading at Election.Campaign (election.go), then Leadership
// (leadership.go), then Campaign (blocking.go).
package election

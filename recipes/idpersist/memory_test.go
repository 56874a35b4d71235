package idpersist_test

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many IDs it draws while
// a replica leads: memcheck.Cycles cycles leave the live scope count
// under the session scopes where it was after the warm-up and the live
// heap within memcheck.Bound of it. A cycle is one Next on client 0,
// then the leader's round it wakes: the draw's write fires the leader's
// watch on the sequence, and the leader reads both nodes again with new
// watches and, once in Chunk-LowWater draws, stores a new mark and
// raises the limit (which fires its own watch on the limit). The leader
// runs on the generator's session (same) or on client 1's (other); the
// scopes of both sessions are counted.
//
// The leader's flow lives through every cycle, so its scopes are in the
// baseline; what is measured is that its rounds, like the draws, leave
// nothing behind. The Store is in memory (a FileStore's fsync would
// dominate). A replica started and stopped per cycle is not measured: a
// Replica has no stop but the end of its flow (its context or scope),
// which leaves its ephemeral candidate until the session ends, so on one
// long-lived session the next replica queues behind it and never leads.
func TestMemoryFlatNext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leader int // the client the replica runs on
	}{{"same", 0}, {"other", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cfg := idpersist.Config{Sequence: "/mem/seq", Limit: "/mem/limit", Election: "/mem/election",
				Store: &markStore{}, Chunk: 10, LowWater: 3}
			r, err := idpersist.NewReplica(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var ended error
			executor.Submit(w.Execs[tc.leader], r.Run(), func(_ task.Unit, err error) { ended = err })
			if !w.Settle(r.Leading) {
				t.Fatal("the replica does not lead")
			}
			scopes := func() int {
				return w.Execs[0].SessionScope().Descendants() + w.Execs[1].SessionScope().Descendants()
			}
			var last int64
			memcheck.Check(t, scopes, func(int) {
				id, err := sim.Run(w, 0, idpersist.Next(cfg))
				if err != nil {
					t.Fatal(err)
				}
				if id != last+1 {
					t.Fatalf("id %d after %d", id, last)
				}
				last = id
				w.Drive() // the leader's round
			})
			if !r.Leading() || r.Turns() != 1 || ended != nil {
				t.Fatalf("leading %v, turns %d, ended with %v", r.Leading(), r.Turns(), ended)
			}
			for _, err := range w.Errs {
				t.Errorf("detached flow failed: %v", err)
			}
		})
	}
}

// markStore is a Store in memory.
type markStore struct{ v int64 }

func (m *markStore) Load() (int64, error) { return m.v, nil }

func (m *markStore) Store(v int64) error {
	if v < m.v {
		return errors.New("the durable mark goes down")
	}
	m.v = v
	return nil
}

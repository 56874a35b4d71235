package idpersist_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

func TestConfigErrors(t *testing.T) {
	fs := newFileStore(t)
	good := idpersist.Config{Sequence: "/s", Limit: "/l", Election: "/e", Store: fs}
	bad := []func(*idpersist.Config){
		func(c *idpersist.Config) { c.Sequence = "s" },
		func(c *idpersist.Config) { c.Limit = "/s" },
		func(c *idpersist.Config) { c.Election = "/e/" },
		func(c *idpersist.Config) { c.Store = nil },
		func(c *idpersist.Config) { c.Chunk = -1 },
		func(c *idpersist.Config) { c.Chunk, c.LowWater = 10, 11 },
	}
	if _, err := idpersist.NewReplica(good); err != nil {
		t.Fatal(err)
	}
	for i, f := range bad {
		cfg := good
		f(&cfg)
		if _, err := idpersist.NewReplica(cfg); !errors.Is(err, idpersist.ErrConfig) || !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("case %d: %v, want ErrConfig", i, err)
		}
	}
	if _, err := idpersist.NewClient(nil, good); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("nil executor: %v", err)
	}
}

// Reserve takes a block, cut short at the limit; a block size below 1
// fails.
func TestReserveStopsAtLimit(t *testing.T) {
	w := newWorld(t, 5, 2, fakezk.Config{})
	w.replica(0)
	var got []seqid.Block
	var errs []error
	take := func(n int64) {
		done := false
		executor.Submit(w.Execs[1], idpersist.Reserve(w.cfg, n), func(b seqid.Block, err error) {
			got, errs, done = append(got, b), append(errs, err), true
		})
		w.settle(func() bool { return done })
	}
	take(4)  // limit 10: 1..4
	take(50) // cut at the limit: 5..10
	take(0)
	want := []seqid.Block{{First: 1, Last: 4}, {First: 5, Last: 10}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || errs[0] != nil || errs[1] != nil {
		t.Fatalf("blocks %v errors %v, want %v", got, errs, want)
	}
	if !errors.Is(errs[2], seqid.ErrBadCount) {
		t.Fatalf("reserve 0: %v, want ErrBadCount", errs[2])
	}
	w.checkMark()
}

// A leader whose connection is cut stops leading as soon as it sees the
// suspension, and leads again after checking its candidate once the
// connection is back (same session).
func TestLeaderStopsOnSuspend(t *testing.T) {
	w := newWorld(t, 6, 2, fakezk.Config{})
	r := w.replica(0)
	w.settle(func() bool { return r.Leading() })
	w.Server.Partition(w.Conns[0], time.Second, false)
	w.Drive()
	if r.Leading() {
		t.Fatal("still leading while suspended")
	}
	w.settle(allOf(w.draw(1, 25), func() bool { return r.Leading() }))
	if r.Turns() != 2 {
		t.Fatalf("turns %d, want 2 (the same candidate leads again)", r.Turns())
	}
	w.checkMark()
}

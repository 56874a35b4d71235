package sim_test

import (
	"encoding/binary"
	"strings"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

func TestCounterScenario(t *testing.T) {
	st := sim.Check(t, counterScenario(), 200)
	for _, cl := range sim.Classes() {
		if cl != sim.Wipe && st.Fired[cl] == 0 {
			t.Errorf("fault class %s never fired in %d seeds", cl, st.Seeds)
		}
	}
}

// blindIncr is incr with the bug the simulation must catch: the write
// ignores the version it read (-1: any), so two clients can both add one
// to the same value.
func blindIncr(path string) task.Task[int64] {
	round := c.Then(task.Get(path), func(d task.Data) task.Task[int64] {
		v := int64(binary.BigEndian.Uint64(d.Data)) + 1
		return c.Map(task.Set(path, binary.BigEndian.AppendUint64(nil, uint64(v)), -1), func(task.Stat) int64 { return v })
	})
	return c.Retry(round, c.Policy{On: []error{task.ErrBadVersion, task.ErrConnectionLoss, task.ErrNotSent}})
}

func TestCatchesBlindWrite(t *testing.T) {
	sc := counterScenario()
	incrTask = blindIncr
	defer func() { incrTask = incr }()
	n, res, found := sim.FirstFailure(sc, 1, 100)
	if !found {
		t.Fatal("a blind write was not caught in 100 seeds")
	}
	if !strings.Contains(res.Err.Error(), "twice") && !strings.Contains(res.Err.Error(), "linearizable") {
		t.Fatalf("caught for another reason: %v", res.Err)
	}
	t.Logf("caught after %d seeds: %v", n, res.Err)
}

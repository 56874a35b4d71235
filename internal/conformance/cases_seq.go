package conformance

import (
	"github.com/zkflow/zkflow/task"
)

func seqCreate(e *Env, rel string, mode task.CreateMode) (string, error) {
	r := e.C.Do(create(e.P(rel), mode))
	return r.Path, r.Err
}

func sequentialCases() []Case {
	return []Case{
		{"seq/first-is-zero", "the first sequential child of a fresh parent is numbered 0000000000", func(e *Env) {
			name, _ := seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n-0000000000"), "name")
		}},
		{"seq/increments", "sequential children are numbered 0, 1, 2 in order", func(e *Env) {
			for _, want := range []string{"n-0000000000", "n-0000000001", "n-0000000002"} {
				name, _ := seqCreate(e, "n-", task.PersistentSequential)
				e.Eq(name, e.P(want), "name")
			}
		}},
		{"seq/uses-cversion", "the number is the parent's cversion: plain creates before count", func(e *Env) {
			e.Mk("a", "b")
			name, _ := seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n-0000000002"), "name")
		}},
		{"seq/delete-does-not-count", "deleting a child does not change the next number (delete leaves cversion)", func(e *Env) {
			name, _ := seqCreate(e, "n-", task.PersistentSequential)
			e.Delete(name)
			name, _ = seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n-0000000001"), "name")
		}},
		{"seq/failed-create-does-not-count", "a failed create does not change the next number", func(e *Env) {
			e.Mk("a")
			e.Err(e.C.Do(create(e.P("a"), task.Persistent)).Err, task.ErrNodeExists, "create")
			name, _ := seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n-0000000001"), "name")
		}},
		{"seq/shared-counter", "different prefixes share the parent's counter", func(e *Env) {
			seqCreate(e, "a-", task.PersistentSequential)
			name, _ := seqCreate(e, "b-", task.PersistentSequential)
			e.Eq(name, e.P("b-0000000001"), "name")
		}},
		{"seq/per-parent", "each parent has its own counter", func(e *Env) {
			e.Mk("x", "y")
			seqCreate(e, "x/n-", task.PersistentSequential)
			name, _ := seqCreate(e, "y/n-", task.PersistentSequential)
			e.Eq(name, e.P("y/n-0000000000"), "name")
		}},
		{"seq/ephemeral-sequential", "an ephemeral sequential node gets a number and the session as owner", func(e *Env) {
			r := e.C.Do(create(e.P("e-"), task.EphemeralSequential))
			e.Err(r.Err, nil, "create")
			e.Eq(r.Path, e.P("e-0000000000"), "name")
			e.Eq(r.Stat.EphemeralOwner, e.C.SessionID(), "owner")
		}},
		{"seq/name-clash", "a sequential create whose name already exists fails with NodeExists", func(e *Env) {
			e.Mk("n-0000000001")
			e.Err(e.C.Do(create(e.P("n-"), task.PersistentSequential)).Err, task.ErrNodeExists, "create")
		}},
		{"seq/cversion-formatted", "the number is the cversion formatted %010d", func(e *Env) {
			cs := Need[CounterSetter](e)
			cs.SetCounters(e.T, e.Base, 0, 12345)
			name, _ := seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n-0000012345"), "name")
		}},
		{"seq/negative-cversion", "a negative cversion is formatted %010d too, sign first", func(e *Env) {
			cs := Need[CounterSetter](e)
			cs.SetCounters(e.T, e.Base, 0, -5)
			name, _ := seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n--000000005"), "name")
		}},
		{"seq/at-max", "at a stored cversion of int32 max the name is 2147483647 and the cversion stays at max (DataTree only raises it)", func(e *Env) {
			cs := Need[CounterSetter](e)
			cs.SetCounters(e.T, e.Base, 0, 1<<31-2)
			name, _ := seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n-2147483646"), "name")
			name, _ = seqCreate(e, "n-", task.PersistentSequential)
			e.Eq(name, e.P("n-2147483647"), "name at max")
			st := e.Stat(e.Base)
			stored := int32(1<<31 - 1)
			e.Eq(st.Cversion, stored*2-st.NumChildren, "reported cversion (2*stored - numChildren, wrapped)")
		}},
		{"seq/after-max-clash", "past int32 max the cversion no longer moves, so the next sequential create clashes: NodeExists", func(e *Env) {
			cs := Need[CounterSetter](e)
			cs.SetCounters(e.T, e.Base, 0, 1<<31-1)
			seqCreate(e, "n-", task.PersistentSequential)
			_, err := seqCreate(e, "n-", task.PersistentSequential)
			e.Err(err, task.ErrNodeExists, "second create at max")
		}},
		{"seq/after-max-pzxid-frozen", "past int32 max a create no longer moves the parent's pzxid", func(e *Env) {
			cs := Need[CounterSetter](e)
			cs.SetCounters(e.T, e.Base, 0, 1<<31-1)
			before := e.Stat(e.Base)
			e.Mk("plain")
			after := e.Stat(e.Base)
			e.Eq(after.Pzxid, before.Pzxid, "pzxid")
			e.Eq(after.NumChildren, before.NumChildren+1, "numChildren")
		}},
	}
}

package idpersist_test

import (
	"encoding/binary"
	"testing"

	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// PROTOCOL.md (many sequences): "A name that was not live (new, or added
// again after removal) whose node holds less than its kept mark is first
// raised to the mark, fenced, before its limit node exists, so a name
// reused after removal never repeats an ID of its earlier life"; and
// (client) "The check ties the write to the incarnation it read".
//
// The check compares the limit node's version only, and retiring a
// removed sequence deletes its limit node: the limit of the name's next
// life is created again at version 0, the version a generator may have
// read from the first one. Schedule: the leader has bound limit 10
// (version 0) to sequence a (version 1, value 0). Generator 1 reads both
// nodes; its multi is late on the network. Generator 2 draws ID 1. A user
// removes a; the leader retires it (its limit node deleted). The user adds
// a again at 0; the leader raises it to the mark (version 1) and creates
// its limit (version 0). Generator 1's multi now lands: check limit at
// version 0 passes (a new node), set a at version 1 passes (a new node),
// and ID 1 is handed out a second time; the new sequence, lowered to 1
// under the mark of 10, then hands out 2..10 again for anyone who drew
// them in its earlier life.
//
// No version check can tell two incarnations of the limit node apart,
// so retiring a name keeps its limit node (still bound to the removed
// node's czxid), and the name added again is raised and bound by rebind,
// in one multi that moves the limit's version past every version a
// generator read: generator 1's multi is refused and it reads again.
// With the canary idpersist/retire-deletes-limit (the old retire) ID 1
// is handed out twice.
func TestReaddedNameLimitVersionAgain(t *testing.T) {
	canarytest.Both(t, "idpersist/retire-deletes-limit", func(t *testing.T, bug bool) { readdedName(t, bug) })
}

func readdedName(t *testing.T, bug bool) {
	w, conns := holdWorld(t, 1, 3)
	m := multiOn(t, w)
	m.allowTwice = bug
	r0 := m.replica(0)
	m.settle(r0.Leading)
	m.create(2, "a", 0)
	seq, lim := "/all-sequences/a", "/all-limits/a"
	m.settle(func() bool {
		_, st, ok := m.NodeData(seq)
		_, lst, lok := m.NodeData(lim)
		return ok && lok && st.Version == 1 && lst.Version == 0
	})

	// Generator 1 reads (limit version 0, sequence version 1); its multi
	// is held.
	g1 := conns[1]
	g1.hold = func(*task.MultiRequest) bool { return true }
	g1.arm(true)
	g1done := m.drawNamed(1, "a", 1)
	m.settle(func() bool { return g1.holding() == 1 })

	m.settle(m.drawNamed(2, "a", 1)) // ID 1

	m.remove(2, "a")
	m.settle(func() bool { return !m.live("a") }) // retired
	m.create(2, "a", 0)
	// The leader raises the new node to the mark and binds a limit to it.
	m.settle(func() bool {
		d, st, ok := m.NodeData(seq)
		ld, _, lok := m.NodeData(lim)
		v, _ := seqid.Decode(d)
		return ok && lok && v >= 10 && len(ld) == 16 && int64(binary.BigEndian.Uint64(ld[8:])) == st.Czxid
	})
	if _, lst, _ := m.NodeData(lim); lst.Version == 0 {
		t.Logf("the limit of a's second life is at version 0 again")
	}

	g1.release()
	m.settle(g1done) // drawNamed reports an ID handed out twice
	m.settle(m.drawNamed(2, "a", 3))
	t.Logf("ids of a in order: %v (mark %d)", m.order["a"], m.mark("a"))
	if bug != (m.twice > 0) {
		t.Fatalf("%d IDs handed out twice (ids of a in order: %v)", m.twice, m.order["a"])
	}
}

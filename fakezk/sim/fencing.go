package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// FencedEntry returns the op that logs one fenced write: a persistent
// sequential node dir/t<token>-<kind>-<seq>. Put it in the holder's
// fenced multi (with the check on its lock node), so ZooKeeper applies it
// only while the lock is held; the order of the sequence numbers is the
// order the server applied the writes. The kind "late" marks a write made
// on purpose after the lock was lost: ZooKeeper must refuse it.
func FencedEntry(dir string, token int64, kind string) task.MultiOp {
	return &task.CreateRequest{Path: fmt.Sprintf("%s/t%d-%s-", dir, token, kind), Mode: task.PersistentSequential, ACL: task.OpenACL}
}

// LogEntry is one entry of a fencing log, as read back from the server.
type LogEntry struct {
	Seq   int64
	Token int64
	Kind  string
}

// FenceLog reads the entries FencedEntry wrote under dir, in the order
// the server applied them, straight from the server's tree.
func FenceLog(w *World, dir string) ([]LogEntry, error) {
	var log []LogEntry
	for _, name := range w.Children(dir) {
		rest, ok := strings.CutPrefix(name, "t")
		parts := strings.Split(rest, "-")
		if !ok || len(parts) != 3 {
			return nil, fmt.Errorf("fence log %s: entry %q is not t<token>-<kind>-<seq>", dir, name)
		}
		tok, err1 := strconv.ParseInt(parts[0], 10, 64)
		seq, err2 := strconv.ParseInt(parts[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("fence log %s: entry %q is not t<token>-<kind>-<seq>", dir, name)
		}
		log = append(log, LogEntry{Seq: seq, Token: tok, Kind: parts[1]})
	}
	slices.SortFunc(log, func(a, b LogEntry) int { return int(a.Seq - b.Seq) })
	return log, nil
}

// CheckFencing judges mutual exclusion by fencing tokens: in the order
// the server applied the fenced writes, tokens never go down (so the
// writes of two holders never interleave), and no "late" write was
// applied. It returns the number of distinct tokens (critical sections
// that wrote) and the first violation.
func CheckFencing(w *World, dir string) (sections int, err error) {
	log, err := FenceLog(w, dir)
	if err != nil {
		return 0, err
	}
	for i, e := range log {
		if e.Kind == "late" {
			return sections, fmt.Errorf("fence log %s: a write after the lock was lost was applied: token %d, seq %d", dir, e.Token, e.Seq)
		}
		if i > 0 && e.Token < log[i-1].Token {
			return sections, fmt.Errorf("fence log %s: holders interleave: token %d (%s, seq %d) applied after token %d (%s, seq %d)",
				dir, e.Token, e.Kind, e.Seq, log[i-1].Token, log[i-1].Kind, log[i-1].Seq)
		}
		if i == 0 || e.Token != log[i-1].Token {
			sections++
		}
	}
	return sections, nil
}

// Fencing is CheckFencing as an end-of-run invariant.
func Fencing(dir string) Invariant {
	return InvariantFunc(func(r *Trial) error {
		_, err := CheckFencing(r.World, dir)
		return err
	})
}

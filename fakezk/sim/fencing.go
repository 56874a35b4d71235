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
	// dir/t<token>-<kind>- as fmt's "%s/t%d-%s-" writes it, without fmt,
	// in one string (a fenced workload makes one at every write).
	var num [20]byte
	tok := strconv.AppendInt(num[:0], token, 10)
	var b strings.Builder
	b.Grow(len(dir) + len(tok) + len(kind) + 4)
	b.WriteString(dir)
	b.WriteString("/t")
	b.Write(tok)
	b.WriteByte('-')
	b.WriteString(kind)
	b.WriteByte('-')
	return &task.CreateRequest{Path: b.String(), Mode: task.PersistentSequential, ACL: task.OpenACL}
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
	return FenceLogOf(worldTree{w}, dir)
}

// Tree is what the fencing checker reads: the children of a node, by its
// path. A *fakezk.Server is one (paths on the server, with no chroot), so
// a run that does not build a World (one whose clients reach the server
// over TCP, internal/wiresim) is judged by the same checker.
type Tree interface {
	Children(path string) ([]string, bool)
}

// worldTree reads a World's server by the clients' paths (below its root).
type worldTree struct{ w *World }

func (t worldTree) Children(dir string) ([]string, bool) { return t.w.Children(dir), true }

// FenceLogOf is FenceLog read from any Tree.
func FenceLogOf(t Tree, dir string) ([]LogEntry, error) {
	names, _ := t.Children(dir)
	var log []LogEntry
	if len(names) > 0 {
		log = make([]LogEntry, 0, len(names))
	}
	for _, name := range names {
		e, err := parseEntry(dir, name)
		if err != nil {
			return nil, err
		}
		log = append(log, e)
	}
	slices.SortFunc(log, func(a, b LogEntry) int { return int(a.Seq - b.Seq) })
	return log, nil
}

func parseEntry(dir, name string) (LogEntry, error) {
	// t<token>-<kind>-<seq>: three parts split at "-", no other "-".
	rest, ok := strings.CutPrefix(name, "t")
	token, rest, ok2 := strings.Cut(rest, "-")
	kind, seqs, ok3 := strings.Cut(rest, "-")
	if !ok || !ok2 || !ok3 || strings.Contains(seqs, "-") {
		return LogEntry{}, fmt.Errorf("fence log %s: entry %q is not t<token>-<kind>-<seq>", dir, name)
	}
	tok, err1 := strconv.ParseInt(token, 10, 64)
	seq, err2 := strconv.ParseInt(seqs, 10, 64)
	if err1 != nil || err2 != nil {
		return LogEntry{}, fmt.Errorf("fence log %s: entry %q is not t<token>-<kind>-<seq>", dir, name)
	}
	return LogEntry{Seq: seq, Token: tok, Kind: kind}, nil
}

// FenceTail reads a fencing log as it grows, for a judge that looks at it
// at every step: each Next returns only the entries added since the last,
// where FenceLog would parse the whole log again. Its zero value is ready
// to use on any directory.
type FenceTail struct {
	dir      string
	czxid    int64 // the directory's incarnation read last (0: none)
	cversion int32 // its cversion then: unchanged, nothing was added
	seen     map[string]bool
	last     int64 // the highest Seq returned (once seen has a name)
}

// Next returns the entries under dir that no earlier call returned, in
// the order the server applied them. When the log cannot be read as a
// continuation of what was returned (dir is another directory than the
// last call's, was deleted or created again, an entry goes before one
// already returned, or an entry went away), reset is true and entries is
// the whole log, as FenceLog returns it: the caller starts over from it.
func (f *FenceTail) Next(w *World, dir string) (entries []LogEntry, reset bool, err error) {
	st, ok := w.NodeStat(dir)
	if !ok {
		reset = f.czxid != 0 || f.dir != dir
		*f = FenceTail{dir: dir}
		return nil, reset, nil
	}
	if dir == f.dir && st.Czxid == f.czxid && st.Cversion == f.cversion {
		return nil, false, nil
	}
	if dir != f.dir || st.Czxid != f.czxid {
		*f = FenceTail{dir: dir, czxid: st.Czxid, seen: map[string]bool{}}
		reset = true
	}
	f.cversion = st.Cversion
	names := w.Children(dir)
	var added []string
	for _, name := range names {
		if f.seen[name] {
			continue
		}
		e, err := parseEntry(dir, name)
		if err != nil {
			return nil, reset, err
		}
		entries, added = append(entries, e), append(added, name)
	}
	slices.SortFunc(entries, func(a, b LogEntry) int { return int(a.Seq - b.Seq) })
	if !reset && (len(names) != len(f.seen)+len(entries) || len(entries) > 0 && len(f.seen) > 0 && entries[0].Seq <= f.last) {
		*f = FenceTail{}
		log, _, err := f.Next(w, dir)
		return log, true, err
	}
	for _, name := range added {
		f.seen[name] = true
	}
	if len(entries) > 0 {
		f.last = entries[len(entries)-1].Seq
	}
	return entries, reset, nil
}

// CheckFencing judges mutual exclusion by fencing tokens: in the order
// the server applied the fenced writes, tokens never go down (so the
// writes of two holders never interleave), and no "late" write was
// applied. And they strictly increase from one holder to the next, as
// the recipes' docs promise: a holder that writes an "enter" entry
// writes it before any other of its entries (more than one if it sends
// it again after a lost reply), so an "enter" after an entry of another
// kind with the same token is a second holder with one token (two
// successive holders, or the same process taking the lock again, each
// hold its own token). Holders that write no "enter" are judged by the
// order only. It returns the number of distinct tokens (critical
// sections that wrote) and the first violation.
func CheckFencing(w *World, dir string) (sections int, err error) {
	return CheckFencingOf(worldTree{w}, dir)
}

// CheckFencingOf is CheckFencing on the log read from any Tree.
func CheckFencingOf(t Tree, dir string) (sections int, err error) {
	log, err := FenceLogOf(t, dir)
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
		if i > 0 && e.Token == log[i-1].Token && e.Kind == "enter" && log[i-1].Kind != "enter" {
			return sections, fmt.Errorf("fence log %s: two holders with one token: token %d enters (seq %d) after its %s (seq %d); tokens must strictly increase from one holder to the next",
				dir, e.Token, e.Seq, log[i-1].Kind, log[i-1].Seq)
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

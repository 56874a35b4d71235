package rwlock

import (
	"cmp"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/recipes/internal/zkops"
)

// The tags that separate a contender's prefix from the sequence number the
// server appends, as Apache Curator's InterProcessReadWriteLock names its
// nodes (both eight characters long: Curator's sorting depends on it).
const (
	readTag  = "__READ__"
	writeTag = "__WRIT__"
)

// Mode is what a contender asks for: to read (shared) or to write
// (exclusive).
type Mode int

const (
	// Read is the shared mode: any number of readers hold at once, and no
	// writer with them.
	Read Mode = iota + 1
	// Write is the exclusive mode: one writer, and no reader with it.
	Write
)

// String is "read" or "write".
func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "mode(?)"
}

func (m Mode) tag() string {
	if m == Write {
		return writeTag
	}
	return readTag
}

// prefix is the name of a contender node before the server appends its
// sequence number: "_c_" + id + "-__READ__" or "-__WRIT__", as Curator's
// protected mode names it.
func prefix(id string, m Mode) string { return "_c_" + id + "-" + m.tag() }

// member is a contender in the directory: its name, its number and its
// mode.
type member struct {
	name string
	seq  int64
	mode Mode
}

// parse returns the mode and number of a contender's name: what follows
// the last "__WRIT__" or "__READ__", ten digits as the server formats a
// Java int (or a minus sign and digits once wrapped: zkops.SeqAfter). Any
// other name (kazoo's nodes, InterProcessMutex's "-lock-" nodes, stray
// names) is not a contender: ok is false.
func parse(name string) (m member, ok bool) {
	if seq, ok := zkops.SeqAfter(name, writeTag); ok {
		return member{name, seq, Write}, true
	}
	if seq, ok := zkops.SeqAfter(name, readTag); ok {
		return member{name, seq, Read}, true
	}
	return member{}, false
}

// queue returns the contenders among names, lowest number first (ties,
// which one directory cannot produce, broken by name). Readers and
// writers share one queue: Curator orders them the same way (by the text
// after either tag, which for the server's fixed-width numbers is the
// numeric order; a wrapped number's minus sign sorts first there too).
func queue(names []string) []member {
	q := make([]member, 0, len(names))
	for _, n := range names {
		if m, ok := parse(n); ok {
			q = append(q, m)
		}
	}
	slices.SortFunc(q, func(a, b member) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), strings.Compare(a.name, b.name))
	})
	return q
}

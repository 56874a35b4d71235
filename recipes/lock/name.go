package lock

import (
	"strings"

	"github.com/zkflow/zkflow/recipes/internal/zkops"
)

// lockTag separates a contender's prefix from the sequence number the
// server appends. Apache Curator's InterProcessMutex uses the same tag and
// orders by what follows its last occurrence, so both recipes see the same
// queue on one directory.
const lockTag = "lock-"

// prefix is the name of a contender node before the server appends its
// sequence number: "_c_" + id + "-lock-", as Curator's protected mode names
// it.
func prefix(id string) string { return "_c_" + id + "-" + lockTag }

// newID returns a 128-bit identifier in UUID text form from two draws of
// the executor's seeded source mixed with the session's id (zkops.NewID, zkops.Draws).
var newID = zkops.NewID

// seqOf parses the sequence number of a contender name: what follows the
// last "lock-", as ZooKeeper formats a Java int with %010d: ten digits, or
// a minus sign and nine or ten digits once the counter has wrapped (see
// zkops.Exhausted). A name without that tag, or with anything else after it
// (kazoo's "__lock__" nodes, stray names), is not a contender: ok is false.
func seqOf(name string) (seq int64, ok bool) { return zkops.SeqAfter(name, lockTag) }

// queue returns the contenders among names, lowest number first
// (zkops.Queue); other names are left out.
func queue(names []string) []zkops.Member { return zkops.Queue(names, lockTag) }

// contenderPath returns dir + "/" + prefix(newID(hi, lo)) built in one
// allocation: the path an attempt's create sends.
func contenderPath(dir string, hi, lo uint64) string {
	const idLen = 36
	var b strings.Builder
	b.Grow(len(dir) + len("/_c_") + idLen + 1 + len(lockTag))
	b.WriteString(dir)
	b.WriteString("/_c_")
	writeHex(&b, hi>>32, 8)
	b.WriteByte('-')
	writeHex(&b, (hi>>16)&0xffff, 4)
	b.WriteByte('-')
	writeHex(&b, hi&0xffff, 4)
	b.WriteByte('-')
	writeHex(&b, lo>>48, 4)
	b.WriteByte('-')
	writeHex(&b, lo&0xffffffffffff, 12)
	b.WriteByte('-')
	b.WriteString(lockTag)
	return b.String()
}

// writeHex writes the n lowest hex digits of v, lower case, with leading
// zeros.
func writeHex(b *strings.Builder, v uint64, n int) {
	const digits = "0123456789abcdef"
	for i := n - 1; i >= 0; i-- {
		b.WriteByte(digits[(v>>(4*uint(i)))&0xf])
	}
}

package wire_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/fakezk/wire"
)

// rd is a reader of a reply body.
type rd struct{ b []byte }

func (r *rd) i32() int32 {
	if len(r.b) < 4 {
		r.b = nil
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.b))
	r.b = r.b[4:]
	return v
}
func (r *rd) i64() int64 {
	if len(r.b) < 8 {
		r.b = nil
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}
func (r *rd) str() string {
	n := r.i32()
	if n < 0 {
		return "<null>"
	}
	if int(n) > len(r.b) {
		r.b = nil
		return "<short>"
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
func (r *rd) strs(sorted bool) []string {
	n := r.i32()
	var v []string
	for range max(n, 0) {
		v = append(v, r.str())
	}
	if sorted {
		slices.Sort(v)
	}
	return v
}

// stat formats a Stat with zxids relative to base, times as ctime==mtime,
// the owner as 0, "eph" (a session id in the usual range) or hex.
func (r *rd) stat(base int64) string {
	cz, mz, ct, mt := r.i64(), r.i64(), r.i64(), r.i64()
	v, cv, av := r.i32(), r.i32(), r.i32()
	eo := r.i64()
	dl, nc := r.i32(), r.i32()
	pz := r.i64()
	rel := func(z int64) string {
		if z <= 0 {
			return fmt.Sprint(z)
		}
		return fmt.Sprintf("b%+d", z-base)
	}
	owner := "0"
	if eo != 0 {
		owner = fmt.Sprintf("%#x", uint64(eo))
		if eo > 0 && eo < 1<<56 {
			owner = "session"
		}
	}
	return fmt.Sprintf("{cz %s mz %s c==m %v v %d cv %d av %d eo %s dl %d nc %d pz %s}", rel(cz), rel(mz), ct == mt, v, cv, av, owner, dl, nc, rel(pz))
}

func (r *rd) acls() string {
	n := r.i32()
	var parts []string
	for range max(n, 0) {
		p := r.i32()
		parts = append(parts, fmt.Sprintf("%d:%s:%s", p, r.str(), r.str()))
	}
	return strings.Join(parts, ",")
}

// describe decodes the body of op's reply.
func describe(op wire.Op, body []byte, base int64) string {
	r := &rd{body}
	switch op {
	case wire.OpCreate:
		return r.str()
	case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		return r.str() + " " + r.stat(base)
	case wire.OpExists, wire.OpSetData, wire.OpSetACL:
		return r.stat(base)
	case wire.OpGetData:
		d := r.str()
		return fmt.Sprintf("%q %s", d, r.stat(base))
	case wire.OpGetACL:
		return r.acls() + " " + r.stat(base)
	case wire.OpGetChildren:
		return fmt.Sprint(r.strs(true))
	case wire.OpGetChildren2:
		return fmt.Sprint(r.strs(true)) + " " + r.stat(base)
	case wire.OpSync:
		return r.str()
	case wire.OpGetEphemerals:
		return fmt.Sprint(r.strs(true))
	case wire.OpAllChildrenCount:
		return fmt.Sprint(r.i32())
	case wire.OpMulti, wire.OpMultiRead:
		var parts []string
		for len(r.b) >= 9 {
			typ := r.i32()
			done := r.b[0] != 0
			r.b = r.b[1:]
			e := r.i32()
			if done {
				break
			}
			s := fmt.Sprintf("[%d e%d", typ, e)
			switch wire.Op(typ) {
			case wire.OpCreate:
				s += " " + r.str()
			case wire.OpCreate2:
				s += " " + r.str() + " " + r.stat(base)
			case wire.OpSetData:
				s += " " + r.stat(base)
			case wire.OpGetData:
				s += fmt.Sprintf(" %q %s", r.str(), r.stat(base))
			case wire.OpGetChildren:
				s += fmt.Sprint(" ", r.strs(true))
			case wire.OpError:
				s += fmt.Sprint(" ", r.i32())
			}
			parts = append(parts, s+"]")
		}
		return strings.Join(parts, " ")
	}
	return fmt.Sprintf("%x", body)
}

func describeNote(b []byte) string {
	r := &rd{b}
	return fmt.Sprintf("ev%d/%d %s", r.i32(), r.i32(), r.str())
}

// tx is a transcript of one raw connection's calls.
type tx struct {
	c     *raw
	name  string
	base  int64
	lines *[]string
}

func (x *tx) do(req wire.Request) wire.ReplyHeader {
	x.c.t.Helper()
	h, body, notes := x.c.call(req)
	var ns []string
	for _, n := range notes {
		ns = append(ns, describeNote(n))
	}
	line := fmt.Sprintf("%s op%d %q: err %d", x.name, req.Op, req.Path, h.Err)
	if h.Err == 0 || req.Op == wire.OpMulti || req.Op == wire.OpMultiRead {
		line += " " + describe(req.Op, body, x.base)
	}
	if len(ns) > 0 {
		line += fmt.Sprintf(" notes %v", ns)
	}
	*x.lines = append(*x.lines, line)
	return h
}

// notes reads what notifications arrive within d (a ping flushes).
func (x *tx) notes() {
	x.c.t.Helper()
	_, _, notes := x.c.call(wire.Request{Op: wire.OpExists, Path: "/zookeeper"})
	var ns []string
	for _, n := range notes {
		ns = append(ns, describeNote(n))
	}
	*x.lines = append(*x.lines, fmt.Sprintf("%s pending notes %v", x.name, ns))
}

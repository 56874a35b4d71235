package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Jute, ZooKeeper's record encoding (BinaryOutputArchive,
// BinaryInputArchive): int 4 bytes and long 8 bytes big-endian, boolean
// one byte, ustring and buffer an int length then the bytes (-1: null),
// vector an int count then the elements (-1: null), a record its fields
// in order with no tags.

// ErrMalformed is wrapped by every decoding error: a record shorter than
// its fields, a negative or oversized length, bytes left over.
var ErrMalformed = errors.New("wire: malformed record")

// enc appends jute fields to a buffer.
type enc struct{ b []byte }

func (e *enc) int(v int32)  { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) long(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *enc) str(s string) { e.int(int32(len(s))); e.b = append(e.b, s...) }

// buf writes a buffer; nil is written as null (-1), as Java writes null.
func (e *enc) buf(b []byte) {
	if b == nil {
		e.int(-1)
		return
	}
	e.int(int32(len(b)))
	e.b = append(e.b, b...)
}

func (e *enc) strs(v []string) {
	e.int(int32(len(v)))
	for _, s := range v {
		e.str(s)
	}
}

// dec reads jute fields; the first error sticks and every later read
// returns zero values, so a record decoder checks err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, what)
	}
}

func (d *dec) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail(what + " past the end")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) int() int32 {
	v := d.take(4, "int")
	if v == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(v))
}

func (d *dec) long() int64 {
	v := d.take(8, "long")
	if v == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func (d *dec) bool() bool {
	v := d.take(1, "boolean")
	return v != nil && v[0] != 0
}

// buf reads a buffer: -1 is null (nil), any other negative length is
// malformed.
func (d *dec) buf() []byte {
	n := d.int()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < 0 {
		d.fail("negative length")
		return nil
	}
	v := d.take(int(n), "buffer")
	if v == nil {
		return nil
	}
	return append(make([]byte, 0, len(v)), v...)
}

// str reads a ustring; null reads as "".
func (d *dec) str() string {
	n := d.int()
	if d.err != nil || n == -1 {
		return ""
	}
	if n < 0 {
		d.fail("negative length")
		return ""
	}
	return string(d.take(int(n), "ustring"))
}

// count reads a vector's count: -1 (null) is 0; a count that could not fit
// in what is left, at min bytes an element, is malformed (so a hostile
// count allocates nothing).
func (d *dec) count(min int) int {
	n := d.int()
	if d.err != nil || n == -1 {
		return 0
	}
	if n < 0 || int64(n)*int64(min) > int64(len(d.b)) || int64(n) > math.MaxInt32 {
		d.fail("bad vector count")
		return 0
	}
	return int(n)
}

func (d *dec) strs() []string {
	n := d.count(4)
	if n == 0 {
		return nil
	}
	v := make([]string, 0, n)
	for range n {
		v = append(v, d.str())
	}
	return v
}

// end reports an error if bytes are left over (and none came before).
func (d *dec) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail(fmt.Sprintf("%d bytes left over", len(d.b)))
	}
	return d.err
}

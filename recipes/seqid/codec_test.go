package seqid_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/zkflow/zkflow/recipes/seqid"
)

// The bytes are those of Java's ByteBuffer.allocate(8).putLong(v).array().
func TestEncodeJavaLong(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		java []byte
	}{
		{0, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{1, []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{256, []byte{0, 0, 0, 0, 0, 0, 1, 0}},
		{0x0102030405060708, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{-1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{math.MaxInt64, []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{math.MinInt64, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
	} {
		if got := seqid.Encode(tc.v); !bytes.Equal(got, tc.java) {
			t.Errorf("Encode(%d) = % x, want % x", tc.v, got, tc.java)
		}
		got, err := seqid.Decode(tc.java)
		if err != nil || got != tc.v {
			t.Errorf("Decode(% x) = %d, %v, want %d", tc.java, got, err, tc.v)
		}
		// getLong reads the first 8 bytes and ignores the rest.
		got, err = seqid.Decode(append(append([]byte{}, tc.java...), "trailing"...))
		if err != nil || got != tc.v {
			t.Errorf("Decode with trailing bytes = %d, %v, want %d", got, err, tc.v)
		}
	}
}

func TestDecodeShortData(t *testing.T) {
	for n := range seqid.Size {
		v, err := seqid.Decode(make([]byte, n))
		if !errors.Is(err, seqid.ErrShortData) || v != 0 {
			t.Errorf("Decode(%d bytes) = %d, %v, want ErrShortData", n, v, err)
		}
	}
	if _, err := seqid.Decode(nil); !errors.Is(err, seqid.ErrShortData) {
		t.Errorf("Decode(nil) = %v, want ErrShortData", err)
	}
}

// Hex matches Java's String.format("%016x", id).
func TestHex(t *testing.T) {
	for _, tc := range []struct {
		id   int64
		want string
	}{
		{0, "0000000000000000"},
		{1, "0000000000000001"},
		{0xabcdef, "0000000000abcdef"},
		{math.MaxInt64, "7fffffffffffffff"},
		{-1, "ffffffffffffffff"},
		{math.MinInt64, "8000000000000000"},
	} {
		if got := seqid.Hex(tc.id); got != tc.want {
			t.Errorf("Hex(%d) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

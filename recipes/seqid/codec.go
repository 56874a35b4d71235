package seqid

import (
	"encoding/binary"
	"fmt"
)

// Size is the length of the encoded value: a Java long.
const Size = 8

// Encode returns v as Java's ByteBuffer.putLong writes it: 8 bytes,
// big-endian, two's complement.
func Encode(v int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, Size), uint64(v))
}

// Decode reads the value as Java's ByteBuffer.getLong does: the first 8
// bytes, big-endian; bytes after them are ignored. Data shorter than 8
// bytes fails with ErrShortData (Java would throw BufferUnderflowException).
func Decode(data []byte) (int64, error) {
	if len(data) < Size {
		return 0, fmt.Errorf("%w: %d bytes", ErrShortData, len(data))
	}
	return int64(binary.BigEndian.Uint64(data)), nil
}

// Hex formats id as the legacy code does: 16 lower-case hex digits,
// zero-padded, a negative id as its two's complement (Java's
// String.format("%016x", id)).
func Hex(id int64) string { return fmt.Sprintf("%016x", uint64(id)) }

package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrame is a 3.8 server's default jute.maxbuffer: the largest
// frame payload it reads. A longer frame closes that connection only.
const DefaultMaxFrame = 0xfffff

// ErrFrameTooLarge is returned by ReadFrame for a length prefix outside
// [0, max].
var ErrFrameTooLarge = errors.New("wire: frame length out of range")

// ReadFrame reads one length-prefixed frame into buf (grown as needed)
// and returns its payload. A length below 0 or above max fails with
// ErrFrameTooLarge before anything is allocated for it.
func ReadFrame(r io.Reader, max int, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	return readPayload(r, int32(binary.BigEndian.Uint32(hdr[:])), max, buf)
}

func readPayload(r io.Reader, n int32, max int, buf []byte) ([]byte, error) {
	if n < 0 || int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: %d, limit %d", ErrFrameTooLarge, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// frame returns payload with its length prefix.
func frame(payload func(b []byte) []byte) []byte {
	b := payload(make([]byte, 4, 64))
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

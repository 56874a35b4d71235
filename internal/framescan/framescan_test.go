package framescan

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func frame(xid int32, body int) []byte {
	b := make([]byte, 8+body)
	binary.BigEndian.PutUint32(b, uint32(4+body))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	for i := range body {
		b[8+i] = 0xfe // bytes that would read as xid -2 if miscounted
	}
	return b
}

// Every xid is found once, in order, whatever the splits of the stream.
func TestFeedAnySplit(t *testing.T) {
	xids := []int32{Ping, 7, Notification, 8, Ping, -8, 0}
	var stream []byte
	for i, x := range xids {
		stream = append(stream, frame(x, i*5)...)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		var s Scanner
		var got []int32
		for p := stream; len(p) > 0; {
			k := 1 + r.IntN(min(len(p), 13))
			s.Feed(p[:k], func(x int32) { got = append(got, x) })
			p = p[k:]
		}
		if !slices.Equal(got, xids) {
			t.Fatalf("xids %v, want %v", got, xids)
		}
	}
}

// A length under 4 ends the frame at its xid: the next bytes start a frame.
func TestFeedShortLength(t *testing.T) {
	b := []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe}
	b = append(b, frame(5, 0)...)
	var s Scanner
	var got []int32
	s.Feed(b, func(x int32) { got = append(got, x) })
	if !slices.Equal(got, []int32{Ping, 5}) {
		t.Fatalf("xids %v, want [-2 5]", got)
	}
}

// Package framescan finds the xid of each frame in a stream of ZooKeeper's
// client protocol after the handshake, however the stream is split into
// reads or writes: a frame is a 4-byte big-endian length and that many
// bytes, and both a request header and a reply header start with the xid.
// zkadapter pairs its pings with their replies with it, and tests read
// their connections' traffic with it.
package framescan

import "encoding/binary"

// Ping is the xid of a ping and of its reply; Notification is the xid of
// a watch notification, which answers no request.
const (
	Ping         int32 = -2
	Notification int32 = -1
)

// Scanner follows one direction of a connection. The zero value is at the
// start of a frame. Not safe for concurrent use.
type Scanner struct {
	hdr  [8]byte // the frame's length, then its xid
	have int     // bytes of hdr read so far
	left int     // bytes of the frame after its xid not read yet
}

// Feed reads p, the stream's next bytes, and calls each with the xid of
// every frame whose xid p completes, in order. A frame shorter than an
// xid (a length under 4) ends at its xid.
func (s *Scanner) Feed(p []byte, each func(xid int32)) {
	for len(p) > 0 {
		if s.have < len(s.hdr) {
			k := copy(s.hdr[s.have:], p)
			s.have += k
			p = p[k:]
			if s.have == len(s.hdr) {
				each(int32(binary.BigEndian.Uint32(s.hdr[4:])))
				s.left = max(int(int32(binary.BigEndian.Uint32(s.hdr[:4])))-4, 0)
				if s.left == 0 {
					s.have = 0
				}
			}
			continue
		}
		k := min(s.left, len(p))
		s.left -= k
		p = p[k:]
		if s.left == 0 {
			s.have = 0
		}
	}
}

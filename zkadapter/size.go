package zkadapter

import (
	"fmt"

	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// packetSize is the length of req on the wire as the Conn sends it: the
// request header (xid, type) and the jute record, the length the server
// compares with its jute.maxbuffer.
func packetSize(req task.Request) int { return reqcheck.PacketSize(req) }

// Lengths on the wire of the prelude's requests with nothing in them: the
// request header (xid, type) and relativeZxid, then three list lengths
// (SetWatches) or five (SetWatches2). Each path adds 4 + its length.
const (
	setWatchesHeader  = 8 + 8 + 3*4
	setWatches2Header = 8 + 8 + 5*4
)

// rewatchSize is the length on the wire of the smallest prelude request
// that sets the watch of req again after a reconnect (req asks for one):
// a SetWatches2 for a persistent watch, a SetWatches for the others.
func rewatchSize(req task.Request) int {
	header := setWatchesHeader
	if _, ok := req.(*task.AddWatchRequest); ok {
		header = setWatches2Header
	}
	return header + 4 + len(req.NodePath())
}

// rewatchTooLarge is task.ErrDataTooLarge for a watch request whose watch
// could not be set again after a reconnect: its path alone makes the
// prelude's request longer than the packet limit.
func rewatchTooLarge(size, limit int) error {
	return fmt.Errorf("%w: setting the watch again after a reconnect takes a request of %d bytes on the wire, over the packet limit of %d (jute.maxbuffer)",
		task.ErrDataTooLarge, size, limit)
}

// authPacketSize is the length on the wire of the setAuth request that
// presents a: the request header, then type, scheme and auth.
func authPacketSize(a task.AuthInfo) int {
	return 8 + 4 + 4 + len(a.Scheme) + 4 + len(a.Auth)
}

// maxSizeLimit bounds Config.MaxDataSize and Config.MaxPacketSize (1 GiB).
// ZooKeeper's jute.maxbuffer is an int, and go-zookeeper allocates its
// encode buffer (the data limit plus 512 KiB) when the Conn opens: a
// larger limit would have it allocate gigabytes, or overflow an int on a
// 32-bit platform.
const maxSizeLimit = 1 << 30

// encodeBufferSize is the size of the buffer go-zookeeper encodes each
// request into (conn.go, open): its own 1.5 MiB, or MaxDataSize plus
// 512 KiB when that is larger.
func encodeBufferSize(maxData int) int { return max(zkEncodeBuffer, maxData+512*1024) }

// encodeTooLarge is task.ErrDataTooLarge for a request that the packet
// limit lets through but that go-zookeeper's encode buffer cannot hold
// (MaxPacketSize set above the buffer): the frame's length, then the
// packet.
func encodeTooLarge(size, buf int) error {
	return fmt.Errorf("%w: the request is %d bytes on the wire, more than the client's encode buffer holds (%d bytes with the frame's length: MaxDataSize plus 512 KiB)",
		task.ErrDataTooLarge, size, buf)
}

// PacketRoom implements task.PacketSizer: the bytes req leaves under
// Config.MaxPacketSize (and the client's encode buffer) once its paths
// are under Config.Root, as Do would send it. Negative when Do would
// refuse it with task.ErrDataTooLarge. Any goroutine.
func (c *Conn) PacketRoom(req task.Request) int {
	if c.cfg.Root != "" {
		req = withRoot(c.cfg.Root, req)
	}
	size := packetSize(req)
	return min(c.cfg.MaxPacketSize-size, encodeBufferSize(c.cfg.MaxDataSize)-4-size)
}

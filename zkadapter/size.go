package zkadapter

import (
	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// DefaultMaxPacketSize is ZooKeeper's default jute.maxbuffer (0xfffff): a
// server closes the connection of a client that sends a longer request,
// which the client sees as connection loss, and a retry sees again.
const DefaultMaxPacketSize = task.MaxPacketSize

// packetSize is the length of req on the wire as the Conn sends it.
func packetSize(req task.Request) int { return reqcheck.PacketSize(req) }

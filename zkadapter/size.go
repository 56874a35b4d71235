package zkadapter

import (
	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// packetSize is the length of req on the wire as the Conn sends it.
func packetSize(req task.Request) int { return reqcheck.PacketSize(req) }

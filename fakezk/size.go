package fakezk

import "github.com/zkflow/zkflow/task"

// DefaultMaxPacketSize is ZooKeeper's default jute.maxbuffer (0xfffff): a
// real server closes the connection of a client that sends a longer
// request, and zkadapter therefore rejects such a request with
// task.ErrDataTooLarge before sending it. fakezk does the same.
const DefaultMaxPacketSize = task.MaxPacketSize

func packetSize(req task.Request) int { return task.PacketSize(req) }

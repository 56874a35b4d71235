package fakezk

import (
	"math"

	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

func packetSize(req task.Request) int { return reqcheck.PacketSize(req) }

// PacketRoom implements task.PacketSizer: the bytes req leaves under the
// server's Config.MaxPacketSize once its paths are under the Conn's root,
// as Do would send it (math.MaxInt when the server has no limit).
// Negative when Do would refuse it with task.ErrDataTooLarge. Any
// goroutine.
func (c *Conn) PacketRoom(req task.Request) int {
	limit := c.srv.cfg.MaxPacketSize
	if limit <= 0 {
		return math.MaxInt
	}
	if root := rooted(c.cfg.Root); root != "" {
		req = root.request(req)
	}
	return limit - packetSize(req)
}

package fakezk

import (
	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

func packetSize(req task.Request) int { return reqcheck.PacketSize(req) }

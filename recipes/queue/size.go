package queue

import (
	"fmt"
	"math"
	"strconv"

	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// An item's data rides in more requests than its put's create: at least
// once, the take's move and the returns from flight, multis with longer
// paths (the copy's, a name above the counter's) and more ops; at most
// once, a put-back under a name above the counter's when the counter has
// run out. A server refuses a request over its packet limit, so an item
// that fits its put but not one of those would stop every take at it
// (at least once) or be lost by its put-back. PutPriority refuses such
// data first (checkSize).

// worstName is the longest item name of a priority: its prefix and the
// largest number returnName or putBack can write.
func worstName(priority int) string {
	return prefix(priority) + strconv.FormatInt(math.MaxInt64, 10)
}

// worstConsumer is as long as every consumer id (two 16-digit hex
// numbers: see register).
const worstConsumer = "ffffffffffffffffffffffffffffffff"

// checkSize fails with an error wrapping task.ErrDataTooLarge when the
// largest request the queue could make with data, at priority, is over
// task.MaxPacketSize (ZooKeeper's default jute.maxbuffer) or data is over
// task.MaxDataSize.
func (q *Queue) checkSize(data []byte, priority int) error {
	if len(data) >= task.MaxDataSize {
		return nil // the create itself is refused, with the Conn's error
	}
	name := worstName(priority)
	item := q.item(name)
	var worst task.Request = &task.CreateRequest{Path: item, Data: data, Mode: task.Persistent, ACL: q.acl.For(item)}
	if q.mode == AtLeastOnce {
		copyPath := q.flight(worstConsumer, math.MaxInt64, name)
		marker := q.marker(worstConsumer)
		move := &task.MultiRequest{Ops: []task.MultiOp{
			&task.CheckRequest{Path: marker, Version: 0},
			q.epochCheck(0),
			&task.CreateRequest{Path: copyPath, Data: data, Mode: task.Persistent, ACL: q.acl.For(copyPath)},
			&task.DeleteRequest{Path: item, Version: 0},
		}}
		giveBack := &task.MultiRequest{Ops: []task.MultiOp{
			&task.CreateRequest{Path: marker, Mode: task.Persistent, ACL: q.acl.For(marker)},
			&task.DeleteRequest{Path: marker, Version: task.AnyVersion},
			q.epochCheck(0),
			&task.CreateRequest{Path: item, Data: data, Mode: task.Persistent, ACL: q.acl.For(item)},
			&task.DeleteRequest{Path: copyPath, Version: 0},
		}}
		worst = move
		if reqcheck.PacketSize(giveBack) > reqcheck.PacketSize(move) {
			worst = giveBack
		}
	}
	if n := reqcheck.PacketSize(worst); n > task.MaxPacketSize {
		return fmt.Errorf("queue: put to %s: %w: %d bytes of data, and the largest request the queue makes with an item (%s) would be %d bytes on the wire, over the packet limit of %d",
			q.dir, task.ErrDataTooLarge, len(data), worst.OpName(), n, task.MaxPacketSize)
	}
	return nil
}

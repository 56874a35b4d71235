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
// once, a put-back under a name above the counter's, a multi with a check
// of the epoch. A server refuses a request over its packet limit, so an
// item that fits its put but not one of those would stop every take at it
// (at least once) or be lost by its put-back. PutPriority refuses such
// data first (checkSize), measured as the connection sends it: its root
// in every path, against its server's limit (task.PacketRoom).

// worstName is the longest item name of a priority: its prefix and the
// largest number returnName or putBack can write.
func worstName(priority int) string {
	return prefix(priority) + strconv.FormatInt(math.MaxInt64, 10)
}

// worstConsumer is as long as every consumer id (two 16-digit hex
// numbers: see register).
const worstConsumer = "ffffffffffffffffffffffffffffffff"

// checkSize fails with an error wrapping task.ErrDataTooLarge when the
// largest request the queue could make with data, at priority, would be
// over the packet limit of s's connection (task.PacketRoom; the runtime
// that cannot say is measured against task.MaxPacketSize with no root).
// Data the put's create cannot carry either is left to the create, which
// the Conn refuses with its own error: data over the create's packet
// room, or over task.MaxDataSize when the room is not known. (A Conn
// configured above the defaults carries data of task.MaxDataSize and
// more: it is measured as any other.)
func (q *Queue) checkSize(s *task.Scope, data []byte, priority int) error {
	put := q.item(prefix(priority)) // the put's create, as it is sent
	putReq := &task.CreateRequest{Path: put, Data: data, Mode: task.PersistentSequential, ACL: q.acl.For(put)}
	if room, known := task.PacketRoom(s, putReq); room < 0 || (!known && len(data) >= task.MaxDataSize) {
		return nil // the create itself is refused, with the Conn's error
	}
	name := worstName(priority)
	item := q.item(name)
	create := &task.CreateRequest{Path: item, Data: data, Mode: task.Persistent, ACL: q.acl.For(item)}
	var worst []task.Request
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
		worst = []task.Request{move, giveBack}
	} else {
		// The put-back under a name above the counter's (putBackAbove).
		worst = []task.Request{create, &task.MultiRequest{Ops: []task.MultiOp{q.epochCheck(0), create}}}
	}
	for _, req := range worst {
		room, known := task.PacketRoom(s, req)
		if !known {
			room = task.MaxPacketSize - reqcheck.PacketSize(req)
		}
		if room < 0 {
			return fmt.Errorf("queue: put to %s: %w: %d bytes of data, and a request the queue makes with an item (%s) would be %d bytes over the connection's packet limit",
				q.dir, task.ErrDataTooLarge, len(data), req.OpName(), -room)
		}
	}
	return nil
}

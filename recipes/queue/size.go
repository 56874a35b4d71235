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
// largest request the queue could make with data, at the priority whose
// paths sp are, would be over the packet limit of s's connection
// (task.PacketRoom; the runtime that cannot say is measured against
// task.MaxPacketSize with no root).
// Data the put's create cannot carry either is left to the create, which
// the Conn refuses with its own error: data over the create's packet
// room, or over task.MaxDataSize when the room is not known. (A Conn
// configured above the defaults carries data of task.MaxDataSize and
// more: it is measured as any other.)
func (q *Queue) checkSize(s *task.Scope, data []byte, sp *sizePaths) error {
	r := new(sizeReqs) // every request measured, in one allocation
	r.put = task.CreateRequest{Path: sp.put, Data: data, Mode: task.PersistentSequential, ACL: q.acl.For(sp.put)}
	if room, known := task.PacketRoom(s, &r.put); room < 0 || (!known && len(data) >= task.MaxDataSize) {
		return nil // the create itself is refused, with the Conn's error
	}
	r.create = task.CreateRequest{Path: sp.item, Data: data, Mode: task.Persistent, ACL: q.acl.For(sp.item)}
	worst := r.worst[:0]
	if q.mode == AtLeastOnce {
		r.copy = task.CreateRequest{Path: sp.copy, Data: data, Mode: task.Persistent, ACL: q.acl.For(sp.copy)}
		r.markerCreate = task.CreateRequest{Path: sp.marker, Mode: task.Persistent, ACL: q.acl.For(sp.marker)}
		r.back = task.CreateRequest{Path: sp.item, Data: data, Mode: task.Persistent, ACL: q.acl.For(sp.item)}
		r.marker = task.CheckRequest{Path: sp.marker, Version: 0}
		r.epoch = task.CheckRequest{Path: q.epochPath(), Version: 0}
		r.epoch2 = r.epoch
		r.del = task.DeleteRequest{Path: sp.item, Version: 0}
		r.delMarker = task.DeleteRequest{Path: sp.marker, Version: task.AnyVersion}
		r.delCopy = task.DeleteRequest{Path: sp.copy, Version: 0}
		r.ops = [5]task.MultiOp{&r.marker, &r.epoch, &r.copy, &r.del}
		r.move.Ops = r.ops[:4]
		r.ops2 = [5]task.MultiOp{&r.markerCreate, &r.delMarker, &r.epoch2, &r.back, &r.delCopy}
		r.giveBack.Ops = r.ops2[:5]
		worst = append(worst, &r.move, &r.giveBack)
	} else {
		// The put-back under a name above the counter's (putBackAbove).
		r.epoch = task.CheckRequest{Path: q.epochPath(), Version: 0}
		r.ops = [5]task.MultiOp{&r.epoch, &r.create}
		r.move.Ops = r.ops[:2]
		worst = append(worst, &r.create, &r.move)
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

// sizeReqs are the requests checkSize measures: the put's create, and
// the largest the queue could make with its data (at least once, the
// take's move and the give-back's multi; at most once, a put-back's
// create and its multi). Measured, never sent.
type sizeReqs struct {
	put, create, copy, markerCreate, back task.CreateRequest
	marker, epoch, epoch2                 task.CheckRequest
	del, delMarker, delCopy               task.DeleteRequest
	move, giveBack                        task.MultiRequest
	ops, ops2                             [5]task.MultiOp
	worst                                 [2]task.Request
}

// sizePaths are the paths checkSize measures for a priority: the put's
// create as it is sent, the item with the longest name the priority can
// have (worstName), and in at least once its in-flight copy under the
// longest consumer id, and that consumer's marker.
type sizePaths struct{ put, item, copy, marker string }

// sizePathsOf returns priority's sizePaths, made once per priority: paths
// are read only, and a Queue may serve several executors.
func (q *Queue) sizePathsOf(priority int) *sizePaths {
	q.sizeMu.Lock()
	defer q.sizeMu.Unlock()
	if sp := q.sizes[priority]; sp != nil {
		return sp
	}
	name := worstName(priority)
	sp := &sizePaths{put: q.item(prefix(priority)), item: q.item(name)}
	if q.mode == AtLeastOnce {
		sp.copy = q.flight(worstConsumer, math.MaxInt64, name)
		sp.marker = q.marker(worstConsumer)
	}
	if q.sizes == nil {
		q.sizes = map[int]*sizePaths{}
	}
	q.sizes[priority] = sp
	return sp
}

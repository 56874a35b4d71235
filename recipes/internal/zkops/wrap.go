package zkops

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// The sequence number a ZooKeeper server appends is the parent's stored
// cversion, a Java int, formatted with %010d; each child create adds one.
// After 2^31-1 creates under one directory it stops being a queue number:
//
//   - the committed counter stays at math.MaxInt32 (DataTree raises the
//     parent's cversion only when the new value is larger), so every later
//     create is named ...2147483647 too; with unique prefixes these creates
//     all succeed, and queue members would tie: a newcomer could sort ahead
//     of the head of the queue;
//   - a create that the server prepares while another is still in its
//     pipeline reads the wrapped in-flight value and is named with a
//     negative number, "-2147483648" and up.
//
// So the queue recipes (lock, election) never queue a node whose number is
// math.MaxInt32 or negative (Exhausted): its owner deletes it, waits until
// the directory has no children, deletes the directory (its cversion goes
// with it) and starts again, creating the directory afresh with the
// counter at zero (EmptyDir). Nodes already queued below the maximum go on
// in order and are served first. To make that pause rare, the owner of a
// node numbered at or above ResetAbove deletes the directory when it
// leaves the queue and the directory is then empty (ResetIfEmpty): on a
// queue that is idle now and then the counter restarts long before it runs
// out.
const ResetAbove = math.MaxInt32 - 1<<20

// Exhausted reports whether seq is a number the server can no longer order.
func Exhausted(seq int64) bool { return seq >= math.MaxInt32 || seq < 0 }

// SeqAfter parses the sequence number of a queue node's name: what follows
// the last occurrence of tag, as ZooKeeper formats a Java int with %010d:
// ten digits, or a minus sign and nine or ten digits once the counter has
// wrapped. A name without tag, or with anything else after it, is not a
// queue node: ok is false.
func SeqAfter(name, tag string) (seq int64, ok bool) {
	i := strings.LastIndex(name, tag)
	if i < 0 {
		return 0, false
	}
	text := name[i+len(tag):]
	digits := strings.TrimPrefix(text, "-")
	if digits == "" || len(text) > 11 || (len(text) == 11 && digits == text) {
		return 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		return 0, false
	}
	return n, true
}

// Member is a child of a queue directory (lock contenders, election
// candidates) that takes part in the queue: its name and number.
type Member struct {
	Name string
	Seq  int64
}

// Queue returns the members among names, those SeqAfter(name, tag)
// parses, lowest number first (ties, which one directory cannot produce,
// broken by name). Other names are left out.
func Queue(names []string, tag string) []Member {
	q := make([]Member, 0, len(names))
	for _, n := range names {
		if seq, ok := SeqAfter(n, tag); ok {
			q = append(q, Member{n, seq})
		}
	}
	slices.SortFunc(q, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), strings.Compare(a.Name, b.Name))
	})
	return q
}

// EmptyDir waits until dir's counter can name nodes again: until dir has
// no children (child watch), then deletes it. A directory already gone is
// done, and so is one whose counter is below its maximum (NextSeq): it was
// deleted and made again meanwhile, its counter restarted, and new
// contenders may already be in it (waiting for that one to empty too would,
// under steady contention, wait for ever). A child that arrives before the
// delete (NotEmpty), or a removed watch, means waiting again.
func EmptyDir(dir string) task.Task[task.Unit] {
	round := c.Then(c.Retry(task.ChildrenW(dir), Retry), func(cw task.ChildrenWatch) task.Task[bool] {
		if NextSeq(cw.Stat) < math.MaxInt32 {
			return task.Value(false)
		}
		if len(cw.Names) > 0 {
			// Any event, or a watch another user of the session took
			// away (RemoveWatches), means looking again.
			return c.Map(c.OnError(cw.Watch.Wait(), removedIsNone, task.ErrWatchRemoved), func(task.Event) bool { return true })
		}
		return c.Map(RemoveDir(dir), func(gone bool) bool { return !gone })
	})
	loop := c.Loop(true, func(again bool) bool { return again }, func(bool) task.Task[bool] { return round })
	return c.Catch(c.Map(loop, func(bool) task.Unit { return task.Unit{} }), func(err error) task.Task[task.Unit] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Done
		}
		return task.Fail[task.Unit](err)
	})
}

// TryEmptyDir is EmptyDir for an attempt that must not wait: it looks
// once and succeeds with true when dir's counter can name nodes again
// (dir gone, its counter below its maximum, or dir deleted now because
// it was empty), and with false when dir holds any child (a contender or
// not), which EmptyDir would wait for.
func TryEmptyDir(dir string) task.Task[bool] {
	look := c.Then(c.Retry(task.Children(dir), Retry), func(cl task.ChildList) task.Task[bool] {
		switch {
		case NextSeq(cl.Stat) < math.MaxInt32:
			return task.Value(true)
		case len(cl.Names) > 0:
			return task.Value(false)
		}
		return RemoveDir(dir)
	})
	return c.Catch(look, func(err error) task.Task[bool] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Value(true)
		}
		return task.Fail[bool](err)
	})
}

// NextSeq is the number the server appends to the next sequential child
// of the node st describes: its stored cversion, which counts child
// creates. Clients are shown 2*cversion - numChildren (creates plus
// deletes, DataNode.copyStat) in int32 arithmetic; the stored count is
// never negative, so it is that sum halved in uint32.
func NextSeq(st task.Stat) int64 {
	return int64((uint32(st.Cversion) + uint32(st.NumChildren)) / 2)
}

// RemoveDir deletes dir if it has no children: true when it is gone
// (deleted now or already), false when a child is in it.
func RemoveDir(dir string) task.Task[bool] {
	del := c.Map(c.Retry(task.Delete(dir, task.AnyVersion), Retry), func(task.Unit) bool { return true })
	return c.Catch(del, func(err error) task.Task[bool] {
		switch {
		case errors.Is(err, task.ErrNoNode):
			return task.Value(true)
		case errors.Is(err, task.ErrNotEmpty):
			return task.Value(false)
		}
		return task.Fail[bool](err)
	})
}

// ResetIfEmpty deletes dir if it has no children, so that its counter
// restarts; any failure is ignored (the next owner near the end tries
// again, and an exhausted number makes its owner wait for it).
func ResetIfEmpty(dir string) task.Task[task.Unit] {
	return c.Map(c.Catch(RemoveDir(dir), func(error) task.Task[bool] { return task.Value(false) }),
		func(bool) task.Unit { return task.Unit{} })
}

package zkops

import (
	"errors"
	"fmt"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// NewID returns a 128-bit identifier in UUID text form from two draws of
// the executor's seeded source (Draws): the unique part of an attempt's
// node name ("_c_<id>-lock-", "_c_<id>-latch-", "_p_<id>-").
func NewID(hi, lo uint64) string {
	// fmt's "%08x-%04x-%04x-%04x-%012x" of hi>>32, (hi>>16)&0xffff,
	// hi&0xffff, lo>>48, lo&0xffffffffffff, in one allocation.
	var b [36]byte
	PutHex(b[0:8], hi>>32)
	b[8] = '-'
	PutHex(b[9:13], hi>>16)
	b[13] = '-'
	PutHex(b[14:18], hi)
	b[18] = '-'
	PutHex(b[19:23], lo>>48)
	b[23] = '-'
	PutHex(b[24:36], lo)
	return string(b[:])
}

// PutHex writes the len(b) lowest hex digits of v to b, lower case, with
// leading zeros (fmt's %0<len(b)>x of a v below 16^len(b)).
func PutHex(b []byte, v uint64) {
	const digits = "0123456789abcdef"
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
}

// Draws returns two draws of the executor's seeded source
// (task.Scope.Rand), the first mixed with the session's id: the 128 bits
// of an ID unique across sessions. Processes started with one seed (two
// copies of a program, or a process restarted with its seed after a
// crash) draw the same numbers, but never on one session, so their IDs
// differ. Random draws alone would not do: once a directory's counter
// restarts (the empty directory deleted and made again) the twin's node
// could get the very name, number included, of the other's lost node, and
// a check on that name and version would pass for both.
func Draws(s *task.Scope) (hi, lo uint64) {
	hi = s.Rand() ^ uint64(s.Session().ID)
	return hi, s.Rand()
}

// WatchNode follows the node a holder owns (a lock's contender node, a
// leader's candidate node) and ends with an error once the holder can no
// longer count on it. Each round reads path with a watch (ExistsW, under
// Retry):
//
//   - the node is missing, or ok is not nil and ok(stat) is false: the
//     task fails with "node <path> deleted";
//   - its version is not version (someone else wrote it): the task fails
//     with "node <path> changed by someone else";
//   - otherwise it waits for the watch: a NodeDeleted event fails as
//     above, any other event (data changed, the watch ended with the
//     connection, or removed by another user of the session) starts the
//     next round.
//
// An operation error a retry cannot settle (session expiry, closing)
// fails the task with that error. The task never succeeds; cancel its
// scope to stop it.
func WatchNode(path string, version int32, ok func(*task.Stat) bool) task.Task[task.Unit] {
	// The error of a node gone is made when it is (most watches end
	// otherwise: a release, the session's end).
	round := c.Then(c.Retry(task.ExistsW(path), Retry), func(sw task.StatWatch) task.Task[bool] {
		if sw.Stat == nil || (ok != nil && !ok(sw.Stat)) {
			return task.Fail[bool](fmt.Errorf("node %s deleted", path))
		}
		if sw.Stat.Version != version {
			return task.Fail[bool](fmt.Errorf("node %s changed by someone else", path))
		}
		// A watch another user of the session took away (RemoveWatches:
		// a cache of the node stopping) is no change: the next round.
		wait := c.OnError(sw.Watch.Wait(), removedIsNone, task.ErrWatchRemoved)
		if canary.On(BugWatchRemovedEndsHold) {
			wait = sw.Watch.Wait()
		}
		return c.Then(wait, func(ev task.Event) task.Task[bool] {
			if ev.Type == task.EventNodeDeleted {
				return task.Fail[bool](fmt.Errorf("node %s deleted", path))
			}
			return task.Value(true)
		})
	})
	loop := c.Loop(true, func(b bool) bool { return b }, func(bool) task.Task[bool] { return round })
	return c.Map(loop, func(bool) task.Unit { return task.Unit{} })
}

// BugWatchRemovedEndsHold: WatchNode takes a watch another user of the
// session removed (RemoveWatches) for the end of the node it watches,
// and the hold it guards is given up though nothing changed. A canary
// (internal/canary), hunted by partition's scenario (its judge of a
// cause for every item given up) under the remove-watches fault class.
const BugWatchRemovedEndsHold canary.Name = "zkops/watch-removed-ends-hold"

// Fenced applies ops in one multi behind a check that path still exists
// at version. A create among ops with a nil ACL gets task.OpenACL, as
// task.CreateWith does. On success the results are those of ops (without
// the check's). If the check fails (the node is gone or was written),
// lost is called with the server's error for the check and the multi's
// error, and the task fails with what lost returns. Another failing op
// gives a *task.OpError wrapping a *task.MultiError whose Index counts
// within ops. Any other error (connection loss: the outcome is unknown) is
// returned as it is, not retried.
func Fenced(path string, version int32, ops []task.MultiOp, lost func(cause, err error) error) task.Task[[]task.MultiResult] {
	f := newFenced(path, version, ops, lostFunc(lost))
	return f.run
}

// Fence is what FencedBy asks of a holder: whether a write may still
// go, and what a failed check becomes. A holder's own value (one it has
// anyway) serves, so that a fenced write makes no function for either.
type Fence interface {
	// Refused is the error a write fails with at once, sending
	// nothing (the holder has given the hold up); nil lets it go.
	Refused() error
	// Lost is the error of a write whose check failed: cause is the
	// server's error for the check, err the multi's (Fenced's lost).
	Lost(cause, err error) error
}

// FencedBy is Fenced with lost as fence.Lost, as a task that first asks
// fence.Refused: a refusal fails it at once, sending nothing; otherwise it
// runs Fenced's task (task.Run), the write's outcome its own.
func FencedBy(path string, version int32, ops []task.MultiOp, fence Fence) task.Task[[]task.MultiResult] {
	f := newFenced(path, version, ops, fence)
	f.write = f.run
	return f.gated
}

// lostFunc is Fenced's lost as a Fence that never refuses.
type lostFunc func(cause, err error) error

func (lostFunc) Refused() error                { return nil }
func (f lostFunc) Lost(cause, err error) error { return f(cause, err) }

func newFenced(path string, version int32, ops []task.MultiOp, fence Fence) *fenced {
	f := &fenced{check: task.CheckRequest{Path: path, Version: version}, fence: fence}
	f.all = f.buf[:0]
	if len(ops)+1 > len(f.buf) {
		f.all = make([]task.MultiOp, 0, len(ops)+1)
	}
	f.all = append(f.all, &f.check)
	opened := false // f.create holds a copy
	for _, op := range ops {
		if cr, ok := op.(*task.CreateRequest); ok && cr != nil && cr.ACL == nil {
			cp := &f.create
			if opened {
				cp = new(task.CreateRequest)
			}
			opened = true
			*cp = *cr
			cp.ACL = task.OpenACL
			op = cp
		}
		f.all = append(f.all, op)
	}
	return f
}

// fenced is one Fenced task: the check, the ops behind it (in buf when
// they are few, with room for the copy of a create given the open ACL)
// and what a failed check becomes, in one allocation.
type fenced struct {
	check  task.CheckRequest
	create task.CreateRequest
	buf    [2]task.MultiOp
	all    []task.MultiOp
	fence  Fence
	write  task.Task[[]task.MultiResult] // run, for gated
}

func (f *fenced) gated(s *task.Scope, k task.Cont[[]task.MultiResult]) {
	if err := f.fence.Refused(); err != nil {
		k(nil, err)
		return
	}
	task.Run(s, f.write, k)
}

func (f *fenced) run(s *task.Scope, k task.Cont[[]task.MultiResult]) {
	task.Run(s, task.Multi(f.all...), func(rs []task.MultiResult, err error) {
		if err == nil {
			k(rs[1:], nil)
			return
		}
		me, isMulti := AsMultiError(err)
		switch {
		case isMulti && me.Index == 0:
			k(nil, f.fence.Lost(me.Err, err))
		case isMulti:
			k(nil, &task.OpError{Op: "multi", Path: f.all[me.Index].NodePath(), Err: &task.MultiError{Index: me.Index - 1, Err: me.Err}})
		default:
			k(nil, err)
		}
	})
}

// BugWithdrawCutCleanup: Detached withdraws its background copy whenever
// the cleanup ends in the caller's flow, even cut short with the scope's
// error as the caller's context ended (a Retry waiting for a reconnect
// does): a release whose delete a connection loss took, with the
// caller's context ending during the outage, never deletes, and the node
// stays for the session's life. A canary (internal/canary): lock's and
// semaphore's TestReleaseCutShortByDeadlineStillDeletes catch it in
// directed histories; semaphore's blocking seed that found it,
// 198752752005405, no longer reaches the schedule since its Client waits
// for its own background deletes, and its regression seed 58019574,
// which names this canary, does with the acl class (a delete refused
// under a closed directory, the cleanup cut short as the context ended:
// 2 of about 18,500 drawn seeds hunted).
const BugWithdrawCutCleanup canary.Name = "zkops/withdraw-cut-cleanup"

// Detached runs del, a cleanup, so that it outlives the caller: if the
// caller's scope ends first (deadline, cancel) the caller gets the scope's
// error and del goes on as a flow of its own (task.Go), started when the
// caller's flow ends; once del ends in the caller's flow with its own
// verdict, no copy starts. A del that ends with the scope's error as the
// scope ends (a Retry waiting for a reconnect does) was cut short, not
// done: its copy runs. Call it directly, Detached(del)(s, k), to run the
// cleanup even on a scope that has already ended. A session that ended
// (ErrSessionExpired, ErrClosed) is success: a holder's ephemeral node
// went with it. The count for a Client (Count) ends when del has ended,
// in the caller's flow or as the copy, also when the copy's flow never
// starts: its session ended first (the node went with it). It was once
// registered with Scope.Defer, whose flow, started in a session that then
// expired, never ran the task that ended the count: the Client's next
// acquire waited for good (semaphore/blocking seed 194004683956400, the
// aftermath of an outage).
func Detached(del task.Task[task.Unit]) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		// Counted for a Client whose attempt's scope s is (Count) until
		// del ends, in the caller's flow or as a flow of its own.
		done := Count(s)
		settled := false
		sc := s.Child()
		task.RunIn(sc, task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
			task.Run(s, del, func(v task.Unit, err error) {
				if err == nil || s.Err() == nil || !errors.Is(err, s.Err()) || canary.On(BugWithdrawCutCleanup) {
					settled = true
					done()
				}
				k(v, err)
			})
		}), func(v task.Unit, err error) {
			if !settled {
				// Cut short, or never started: del goes on as a flow of
				// its own. Go's outcome comes whether or not the flow
				// could start.
				task.Go(s, del, func(_ task.Unit, err error) {
					done()
					if err != nil && !errors.Is(err, task.ErrSessionExpired) && !errors.Is(err, task.ErrClosed) {
						s.Runtime().Report(err)
					}
				})
			}
			if errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
				err = nil // the node went with the session
			}
			k(v, err)
		})
	}
}

// WaitChange watches path with an exists watch (under Retry) and succeeds
// once path is missing (at once, or later) or its watch fires with any
// event: a waiter in a queue watches its predecessor with it and then
// lists the queue again, whatever the event was. The value says whether
// the predecessor is gone (missing, or the watch fired with
// NodeDeleted) rather than changed (a watch another user of the session
// removed counts as changed). An error of the read or of the watch
// (session expiry, the scope's end) ends the task with it. ZooKeeper
// tells no session of a change to a node it may not READ, so that an
// exists watch there would never fire: a plain getData sent right behind
// the exists (one round trip) checks READ, and a node the session may
// not read fails the task with task.ErrNoAuth at once.
func WaitChange(path string) task.Task[bool] {
	canRead := func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, c.Retry(task.Get(path), Retry), func(_ task.Data, err error) {
			if errors.Is(err, task.ErrNoNode) {
				err = nil // gone: the exists says so
			}
			task.Resume(s, k, task.Unit{}, err)
		})
	}
	return func(s *task.Scope, k task.Cont[bool]) {
		var sw task.StatWatch
		watch := c.Map(c.Retry(task.ExistsW(path), Retry), func(w task.StatWatch) task.Unit { sw = w; return task.Unit{} })
		task.Run(s, c.All(watch, canRead), func(_ []task.Unit, err error) {
			switch {
			case err != nil:
				task.Resume(s, k, false, err)
			case sw.Stat == nil:
				task.Resume(s, k, true, nil)
			default:
				// A watch another user of the session took away
				// (RemoveWatches) is a change: look again.
				task.Run(s, c.Map(c.OnError(sw.Watch.Wait(), removedIsNone, task.ErrWatchRemoved), func(ev task.Event) bool { return ev.Type == task.EventNodeDeleted }), k)
			}
		})
	}
}

// removedIsNone turns a watch's task.ErrWatchRemoved (another user of
// the session took the watch away: RemoveWatches) into an event of no
// type, which WatchNode and WaitChange take for a wake-up.
func removedIsNone(error) task.Task[task.Event] { return task.Value(task.Event{}) }

// AsMultiError is errors.As(err, &me) for me a *task.MultiError, finding
// the same error in err's tree (an error whose As method answers
// included) without moving a target to the heap: a failed multi's error
// is read on every failure.
func AsMultiError(err error) (*task.MultiError, bool) {
	for err != nil {
		if me, ok := err.(*task.MultiError); ok {
			return me, true
		}
		if x, ok := err.(interface{ As(any) bool }); ok {
			var me *task.MultiError
			if x.As(&me) {
				return me, true
			}
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if me, ok := AsMultiError(e); ok {
					return me, true
				}
			}
			return nil, false
		default:
			return nil, false
		}
	}
	return nil, false
}

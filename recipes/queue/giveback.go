package queue

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"

	"github.com/zkflow/zkflow/task"
)

// Giving back what a take took as it ended. A take's delete (at-most-once)
// or move (at-least-once) runs as a flow of its own (detached), so that a
// take canceled or past its deadline while that request is in flight does
// not drop its outcome: if the item was taken after all, it is given back
// (putBack, giveBackOwn) instead of being lost or held until the
// consumer's session ends.

// detached runs t as a flow of its own, not ended with s: while s runs, k
// receives t's outcome; once s has ended (the take was canceled or passed
// its deadline, and its caller has its error), orphan does. t is counted
// in q.settling until it ends, and the give-back orphan starts (putBack,
// giveBackOwn: each counts itself) until that ends.
func detached[T any](q *Queue, s *task.Scope, t task.Task[T], k, orphan func(T, error)) {
	q.settling.Begin()
	task.Go(s, t, func(v T, err error) {
		defer q.settling.End()
		if s.Err() != nil {
			orphan(v, err)
			return
		}
		k(v, err)
	})
}

// putBack puts an at-most-once item that a take deleted, but could not
// deliver, back at the end of its priority: a new item with the same
// data, created as a put creates one (persistent-sequential), so items
// are still taken in the order their creates were applied and the item
// is behind those queued now, not behind every item put later. It is not
// a put all the same: the queue's bound does not refuse it (the item was
// queued already), and a counter that has run out, with items queued,
// does not either: it is then named with its priority's prefix and 2^32
// plus the deleted item's czxid (putBackAbove: above any number the
// counter hands out, and unique, as czxids are; no put succeeds until
// the queue has drained, so it is still behind only what is queued now),
// in that incarnation of the directory only (a directory made again has
// a counter that starts over: the item is put back as a put creates one).
// A directory deleted meanwhile is made again. It was delivered to no
// one, so it is still delivered at most once. A create whose outcome is
// unknown (a lost connection, an expiry) is not sent again: another
// consumer may have taken the item since, and a second create would
// queue it again. A create an operator's ACL refuses (task.ErrNoAuth:
// the directory closed) was not applied, so sending it again queues the
// item at most once: it is sent again every twice the session timeout
// until the ACL lets it, counted in q.settling meanwhile. An item not put
// back goes to the executor's error report with its data: as an
// *UnknownTakeError when the create's outcome is unknown or the session
// ended, as a *PutBackError when the create was refused. It may be lost,
// never silently.
func (q *Queue) putBack(s *task.Scope, it Item) {
	q.settling.Begin()
	t := zkops.UntilAllowed(q.putBackTask(it))
	if canary.On(bugPutBackAsPut) {
		t = c.Map(q.PutPriority(it.Data, it.Priority), func(string) task.Unit { return task.Unit{} })
	}
	task.Go(s, t, func(_ task.Unit, err error) {
		defer q.settling.End()
		switch {
		case err == nil:
		case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed), canary.On(bugPutBackAsPut):
			s.Runtime().Report(&UnknownTakeError{Item: it, Err: fmt.Errorf("putting it back, taken as its take ended: %w", err)})
		default:
			s.Runtime().Report(&PutBackError{Item: it, Err: err})
		}
	})
}

func (q *Queue) putBackTask(it Item) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		k1 := func(_ string, err error) { k(task.Unit{}, err) }
		if canary.On(bugPutBackAboveCounter) {
			q.putBackAbove(s, it, nil, k1)
			return
		}
		p := &putting{q: q, s: s, path: q.item(prefix(it.Priority)), data: it.Data, back: &it, k: k1}
		p.create()
	}
}

// putBackAbove creates the item put back under its priority's prefix and
// 2^32 plus its czxid, when the counter has run out (putBack). p, when
// not nil, is the put-back's putting: the name above the counter is
// created only in the incarnation of the directory whose counter has run
// out. The epoch's version is read, then the directory's Stat, which must
// show the counter run out, and the create's multi checks the epoch at
// that version: a directory deleted (by hand, once it was empty) and
// created again since has a counter that starts over, and a put-back named
// above it there would be taken after items put later. Then, and when
// the directory is gone, the item is put back as a put creates one
// (p.create).
func (q *Queue) putBackAbove(s *task.Scope, it Item, p *putting, k task.Cont[string]) {
	path := q.item(prefix(it.Priority) + strconv.FormatInt(1<<32+it.czxid, 10))
	if p == nil || canary.On(bugPutBackAboveAnyIncarnation) {
		q.putBackAboveBlind(s, it, path, k)
		return
	}
	var try func()
	try = func() {
		task.Run(s, c.Retry(task.Exists(q.epochPath()), zkops.Retry), func(est *task.Stat, err error) {
			switch {
			case err != nil:
				k("", err)
				return
			case est == nil: // no epoch: no directory the queue made
				p.create()
				return
			}
			task.Run(s, c.Retry(task.Exists(q.dir), zkops.Retry), func(dst *task.Stat, err error) {
				switch {
				case err != nil:
					k("", err)
					return
				case dst == nil || !counterRunOut(*dst):
					p.create() // gone, or created again: its counter starts over
					return
				}
				const opEpoch = 0
				create := task.CreateOp(path, it.Data, task.Persistent)
				create.ACL = q.acl.For(path)
				var send func()
				send = func() {
					task.Run(s, task.Multi(task.CheckOp(q.epochPath(), est.Version), create), func(_ []task.MultiResult, err error) {
						switch i := multiIndex(err); {
						case err == nil:
							k(task.Base(path), nil)
						case errors.Is(err, task.ErrNotSent):
							send()
						case i == opEpoch && (errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrBadVersion)):
							try() // the directory was created again since the read
						case i != opEpoch && errors.Is(err, task.ErrNoNode):
							p.create() // the directory is gone: made again, with a new counter
						default:
							k("", err)
						}
					})
				}
				send()
			})
		})
	}
	try()
}

// counterRunOut reports whether a Stat shows its node's child counter at
// int32's maximum: clients are shown 2*cversion - numChildren in int32
// arithmetic (DataNode.copyStat); the stored cversion is never negative,
// so it is that sum halved in uint32.
func counterRunOut(st task.Stat) bool {
	return (uint32(st.Cversion)+uint32(st.NumChildren))/2 == math.MaxInt32
}

// putBackAboveBlind is putBackAbove without the look at the directory's
// incarnation: the task face's old behaviour, which the canary
// queue/put-back-above-any-incarnation puts back.
func (q *Queue) putBackAboveBlind(s *task.Scope, it Item, path string, k task.Cont[string]) {
	var create func()
	create = func() {
		req := &task.CreateRequest{Path: path, Data: it.Data, Mode: task.Persistent, ACL: q.acl.For(path)}
		task.Run(s, task.CreateWith(req), func(_ task.Created, err error) {
			switch {
			case err == nil:
				k(task.Base(path), nil)
			case errors.Is(err, task.ErrNotSent):
				create()
			case errors.Is(err, task.ErrNoNode):
				task.Run(s, q.ensureDir(), func(_ task.Unit, err error) {
					if err != nil {
						k("", err)
						return
					}
					create()
				})
			default:
				k("", err)
			}
		})
	}
	create()
}

// giveBackOwn returns an item its live consumer holds in flight (moved as
// its take ended) to the queue: one multi checks the consumer's marker
// and the directory's epoch, creates the item under its own name (see
// returnName) and deletes the copy. A copy found gone was given back
// already (a lost reply); a marker found gone means the item is returned
// by the others as a dead consumer's.
//
// One an operator's ACL refuses (task.ErrNoAuth: the marker closed, the
// directory or the in-flight directory made read only) is sent again
// every twice the session timeout until the ACL lets it or the session
// ends (zkops.UntilAllowed): the item is this consumer's, and nobody
// else would return it while the consumer lives. It stays counted in
// q.settling meanwhile (Client.Settle waits for it).
func (q *Queue) giveBackOwn(s *task.Scope, cn *consumer, it Item) {
	q.settling.Begin()
	task.Go(s, zkops.UntilAllowed(q.giveBackTask(cn, it)), func(_ task.Unit, err error) {
		defer q.settling.End()
		if err != nil {
			s.Runtime().Report(fmt.Errorf("queue: giving back %s, moved as its take ended: %w", it.Name, err))
		}
	})
}

func (q *Queue) giveBackTask(cn *consumer, it Item) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		copyPath := q.flight(cn.id, it.czxid, it.Name)
		var send func()
		send = func() {
			task.Run(s, q.readDir(), func(ds dirState, err error) {
				if err != nil {
					k(task.Unit{}, err)
					return
				}
				// The copy's own czxid is not known here: a name above
				// the counter's from the item's stands in for it (unique
				// too: czxids are).
				path := q.item(returnName(task.Base(copyPath), it.czxid, ds))
				ops := []task.MultiOp{
					&task.CheckRequest{Path: cn.marker, Version: 0},
					q.epochCheck(ds.epoch),
					&task.CreateRequest{Path: path, Data: it.Data, Mode: task.Persistent, ACL: q.acl.For(path)},
					// Any version: the marker's check says the copy is
					// still this consumer's, whoever wrote it.
					&task.DeleteRequest{Path: copyPath, Version: task.AnyVersion},
				}
				task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
					switch i := multiIndex(err); {
					case err == nil:
						delete(q.claimed, copyPath)
						k(task.Unit{}, nil)
					case errors.Is(err, task.ErrNoAuth):
						k(task.Unit{}, err) // not applied: an ACL refuses one of the ops
					case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
						send() // applied before: the copy is gone and this fails
					case i == 1 || (i == 2 && errors.Is(err, task.ErrNoNode)):
						q.staleEpoch(ds.epoch)
						send()
					case i == 0, i == 3:
						delete(q.claimed, copyPath)
						k(task.Unit{}, nil) // returned by others, or given back already
					case i == 2 && errors.Is(err, task.ErrNodeExists) && !canary.On(bugGiveBackExistsFails):
						// The item's name (returnName: its own, or one
						// above the counter's from its czxid) is taken:
						// by a send whose reply was lost, which took the
						// copy in the same multi, or, the copy still
						// there, by another node.
						task.Run(s, c.Retry(task.Exists(copyPath), zkops.Retry), func(st *task.Stat, xerr error) {
							switch {
							case xerr != nil:
								k(task.Unit{}, xerr)
							case st == nil:
								delete(q.claimed, copyPath)
								k(task.Unit{}, nil) // given back by the lost send
							default:
								k(task.Unit{}, err)
							}
						})
					default:
						k(task.Unit{}, err)
					}
				})
			})
		}
		send()
	}
}

package queue

import (
	"errors"
	"strconv"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// The directory's epoch. A take reads an item, then deletes (or moves) it
// at the version read; ZooKeeper can check a node's version in a multi,
// not its incarnation, and every incarnation of a name starts at version
// 0. Within one directory a name is never handed out twice (the queue
// never lets the counter repeat, see PutPriority); across a directory
// deleted and created again it is, from zero. So every take's multi also
// checks the version of DIR.epoch, a sibling node whose version the queue
// raises in the same multi that creates the directory, and in the same
// multi that deletes it when it restarts the counter: a take that read an
// item before the directory was created again fails its check instead of
// deleting the new item under the old one's name.
//
// The epoch's version is cached per Queue (an atomic, as an at-most-once
// Queue may be shared by executors): the cached value was read before any
// item a take reads with it, so a check that passes proves that the
// directory was not created again since; a stale cache costs one failed
// multi, then the take reads the epoch again and lists again.

func (q *Queue) epochPath() string {
	if q.epochP != "" {
		return q.epochP
	}
	return q.dir + ".epoch"
}

// epochRead is the epoch's version as read on one session.
type epochRead struct {
	sess    int64
	version int32
}

// epochVersion succeeds with the epoch's version, from the cache or read
// (the node created first if it is missing). The cache holds for the
// session that read it: a take's check of the epoch proves its listing is
// of the incarnation the epoch names only if the listing is no older than
// the epoch's read, and a session's reads never go back, but another
// session's member may be behind that read (a new session after an
// expiry, another executor's session).
func (q *Queue) epochVersion() task.Task[int32] {
	if q.epochV != nil {
		return q.epochV
	}
	return q.buildEpochVersion()
}

// buildEpochVersion builds epochVersion's task.
func (q *Queue) buildEpochVersion() task.Task[int32] {
	return func(s *task.Scope, k task.Cont[int32]) {
		sess := s.Session().ID
		if e := q.epoch.Load(); e != nil && (e.sess == sess || canary.On(bugEpochAnySession)) {
			k(e.version, nil)
			return
		}
		var read func()
		read = func() {
			task.Run(s, c.Retry(task.Exists(q.epochPath()), zkops.Retry), func(st *task.Stat, err error) {
				switch {
				case err != nil:
					k(0, err)
				case st == nil:
					task.Run(s, zkops.EnsurePath(q.epochPath(), q.acl), func(_ task.Unit, err error) {
						if err != nil {
							k(0, err)
							return
						}
						read()
					})
				case st.Version == -1:
					// A check of -1 checks nothing (any version): raise
					// it first (2^32 raises of the directory's creates
					// and deletes).
					task.Run(s, c.Retry(task.Set(q.epochPath(), nil, -1), zkops.Retry), func(_ task.Stat, err error) {
						if err != nil {
							k(0, err)
							return
						}
						read()
					})
				default:
					q.epoch.Store(&epochRead{sess: sess, version: st.Version})
					k(st.Version, nil)
				}
			})
		}
		read()
	}
}

// staleEpoch forgets the cached version v (a multi's check of it failed).
func (q *Queue) staleEpoch(v int32) {
	if e := q.epoch.Load(); e != nil && e.version == v {
		q.epoch.CompareAndSwap(e, nil)
	}
}

// epochCheck is the op a take's multi starts with.
func (q *Queue) epochCheck(v int32) task.MultiOp {
	return &task.CheckRequest{Path: q.epochPath(), Version: v}
}

// bumpEpoch is the op that raises the epoch, in the multi that creates or
// deletes the directory.
func (q *Queue) bumpEpoch() task.MultiOp {
	return &task.SetDataRequest{Path: q.epochPath(), Version: task.AnyVersion}
}

// ensureDir creates the directory if it is missing, with its ancestors
// and the epoch, raising the epoch in the same multi. A directory that
// exists is fine.
func (q *Queue) ensureDir() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		var send func()
		send = func() {
			ops := []task.MultiOp{
				&task.CreateRequest{Path: q.dir, Mode: task.Persistent, ACL: q.acl.For(q.dir)},
				q.bumpEpoch(),
			}
			task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
				switch i := multiIndex(err); {
				case err == nil, i == 0 && errors.Is(err, task.ErrNodeExists):
					k(task.Unit{}, nil)
				case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
					send() // applied before: NodeExists now
				case errors.Is(err, task.ErrNoNode):
					// The parent (op 0) or the epoch (op 1) is missing.
					task.Run(s, zkops.EnsurePath(q.epochPath(), q.acl), func(_ task.Unit, err error) {
						if err != nil {
							k(task.Unit{}, err)
							return
						}
						send()
					})
				default:
					k(task.Unit{}, err)
				}
			})
		}
		send()
	}
}

// removeDir deletes the directory if it is empty, raising the epoch in
// the same multi: gone is true when it is gone (now or already), false
// when a child is in it.
func (q *Queue) removeDir() task.Task[bool] {
	return func(s *task.Scope, k task.Cont[bool]) {
		var send func()
		send = func() {
			ops := []task.MultiOp{&task.DeleteRequest{Path: q.dir, Version: task.AnyVersion}, q.bumpEpoch()}
			task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
				switch i := multiIndex(err); {
				case err == nil:
					k(true, nil)
				case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
					send() // applied before: NoNode now
				case i == 0 && errors.Is(err, task.ErrNoNode):
					k(true, nil)
				case i == 0 && errors.Is(err, task.ErrNotEmpty):
					k(false, nil)
				case i == 1 && errors.Is(err, task.ErrNoNode):
					task.Run(s, zkops.EnsurePath(q.epochPath(), q.acl), func(_ task.Unit, err error) {
						if err != nil {
							k(false, err)
							return
						}
						send()
					})
				default:
					k(false, err)
				}
			})
		}
		send()
	}
}

// dirState is what a return needs to name an item: the epoch's version
// and, read after it, the directory's czxid.
type dirState struct {
	epoch int32
	czxid int64
}

// readDir succeeds with the epoch's version and then the directory's
// czxid (the directory created first if it is missing). A multi that
// checks that epoch version acts on that incarnation of the directory.
func (q *Queue) readDir() task.Task[dirState] {
	return func(s *task.Scope, k task.Cont[dirState]) {
		var read func()
		read = func() {
			task.Run(s, q.epochVersion(), func(epoch int32, err error) {
				if err != nil {
					k(dirState{}, err)
					return
				}
				task.Run(s, c.Retry(task.Exists(q.dir), zkops.Retry), func(st *task.Stat, err error) {
					switch {
					case err != nil:
						k(dirState{}, err)
					case st == nil:
						task.Run(s, q.ensureDir(), func(_ task.Unit, err error) {
							if err != nil {
								k(dirState{}, err)
								return
							}
							q.staleEpoch(epoch) // raised by the create
							read()
						})
					default:
						k(dirState{epoch: epoch, czxid: st.Czxid}, nil)
					}
				})
			})
		}
		read()
	}
}

// returnName is the name under which an in-flight copy goes back to the
// queue: the item's own name if the item was created in the directory as
// it is now (its czxid, from the copy's name, not older than the
// directory's), so it sorts where it was. An item from an earlier
// incarnation of the directory (deleted and created again since, the
// counter restarted) would take a name the counter may have given a new
// item: it goes back as prefix + (2^32 + the copy's czxid), a number the
// counter never hands out and no other copy has, sorted after every
// counted item of its priority.
func returnName(entry string, copyCzxid int64, ds dirState) string {
	_, name, czxid, ok := splitFlightZ(entry)
	pri, _, _ := parse(name)
	if ok && czxid >= ds.czxid {
		return name
	}
	return prefix(pri) + strconv.FormatInt(1<<32+copyCzxid, 10)
}

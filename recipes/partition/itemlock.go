package partition

import (
	"errors"
	"fmt"
	"slices"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// bugHoldAtCreate: an item counts as held as soon as the member's lock
// node is created, without waiting for the contenders below it to go
// (the item handed over before the old owner gave it up).
const bugHoldAtCreate canary.Name = "partition/hold-at-create"

// bugExhaustedSeq: a contender whose number the server can no longer
// order (the item directory's counter ran out: zkops.Exhausted) waits in
// the queue like any other, so that two contenders named with int32's
// maximum both hold the item once the holder goes.
const bugExhaustedSeq canary.Name = "partition/queue-exhausted-sequence"

var retry = zkops.Retry

// lockNode is a held item lock: its node's path and stat.
type lockNode struct {
	path string
	stat task.Stat
}

// contender is a kazoo Lock node of an item's directory.
type contender struct {
	name string
	seq  int64
}

// contenders returns the kazoo Lock nodes among names (<anything>__lock__
// followed by the server's sequence number), ordered by number. Other
// names are not contenders, as for kazoo's Lock.
func contenders(names []string) []contender {
	var cs []contender
	for _, n := range names {
		if seq, ok := zkops.SeqAfter(n, lockTag); ok {
			cs = append(cs, contender{n, seq})
		}
	}
	slices.SortFunc(cs, func(a, b contender) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return cs
}

// lockItem takes the kazoo-layout lock of dir as kazoo's Lock does:
// create dir/<prefix>__lock__ (ephemeral sequential), list, hold when no
// contender has a lower number, else watch the next lower one and list
// again when it changes. prefix is unique to the attempt (hexID), so a
// create whose reply was lost is settled by prefix and owning session.
// The caller's scope registers the cleanup (cleanupAttempt).
func lockItem(dir, prefix string, data []byte, acl task.ACLProvider) task.Task[lockNode] {
	return func(s *task.Scope, k task.Cont[lockNode]) {
		owner := s.Session().ID
		path := dir + "/" + prefix + lockTag // the path sent: the server appends the sequence number
		l := &itemLock{s: s, k: k, dir: dir, prefix: prefix, acl: acl, owner: owner}
		l.req = task.CreateRequest{Path: path, Data: data, Mode: task.EphemeralSequential, ACL: acl.For(path)}
		l.create()
	}
}

// itemLock is one run of lockItem's task.
type itemLock struct {
	s      *task.Scope
	k      task.Cont[lockNode]
	dir    string
	prefix string
	acl    task.ACLProvider
	owner  int64
	req    task.CreateRequest // the create CreateUnique copies for each attempt
}

func (l *itemLock) settle() task.Task[[]string] {
	return c.Map(zkops.Owned(l.dir, l.prefix, l.owner), zkops.Names)
}

// wait holds once no contender has a lower number than ours.
func (l *itemLock) wait(name string, mine int64, path string) {
	if canary.On(bugHoldAtCreate) {
		l.held(path)
		return
	}
	l.list(name, mine, path)
}

func (l *itemLock) held(path string) {
	s, k, owner := l.s, l.k, l.owner
	task.Run(s, c.Retry(task.Exists(path), retry), func(st *task.Stat, err error) {
		switch {
		case err != nil:
			k(lockNode{}, err)
		case st == nil || st.EphemeralOwner != owner:
			k(lockNode{}, fmt.Errorf("partition: %w: %s: node deleted while acquiring", ErrLost, path))
		default:
			k(lockNode{path: path, stat: *st}, nil)
		}
	})
}

func (l *itemLock) list(name string, mine int64, path string) {
	s, k, dir := l.s, l.k, l.dir
	task.Run(s, c.Retry(task.Children(dir), retry), func(cl task.ChildList, err error) {
		if errors.Is(err, task.ErrNoNode) {
			// The directory was deleted (by an operator): our node went first.
			k(lockNode{}, fmt.Errorf("partition: %w: %s: directory deleted while acquiring", ErrLost, path))
			return
		}
		if err != nil {
			k(lockNode{}, err)
			return
		}
		cs := contenders(cl.Names)
		if !slices.ContainsFunc(cs, func(x contender) bool { return x.name == name }) {
			k(lockNode{}, fmt.Errorf("partition: %w: %s: node deleted while acquiring", ErrLost, path))
			return
		}
		var pred string
		for _, x := range cs {
			if x.seq < mine {
				pred = x.name
			}
		}
		if pred == "" {
			l.held(path)
			return
		}
		task.Run(s, zkops.WaitChange(dir+"/"+pred), func(_ bool, err error) {
			if err != nil {
				k(lockNode{}, err)
				return
			}
			l.list(name, mine, path)
		})
	})
}

// afterReset creates our node again once the directory has been
// emptied and made afresh, its counter back at zero.
func (l *itemLock) afterReset() {
	s, k := l.s, l.k
	task.Run(s, zkops.EmptyDir(l.dir), func(_ task.Unit, err error) {
		if err != nil {
			k(lockNode{}, err)
			return
		}
		l.create()
	})
}

func (l *itemLock) create() {
	s, k, owner := l.s, l.k, l.owner
	task.Run(s, zkops.CreateUnique(&l.req, l.dir, l.acl, l.settle), func(name string, err error) {
		if errors.Is(err, task.ErrNodeExists) && !canary.On(bugExhaustedSeq) {
			// A sequential create clashes only when the counter is
			// stuck at its maximum: wait for the reset.
			l.afterReset()
			return
		}
		if err != nil {
			k(lockNode{}, err)
			return
		}
		mine, _ := zkops.SeqAfter(name, lockTag)
		path := l.dir + "/" + name
		if zkops.Exhausted(mine) && !canary.On(bugExhaustedSeq) {
			// A number the server can no longer order (it ties
			// with others, or sorts below the holder's): withdraw,
			// and take the lock again after the reset.
			task.Run(s, zkops.DeleteOwned(path, owner), func(_ task.Unit, err error) {
				if err != nil {
					k(lockNode{}, err)
					return
				}
				l.afterReset()
			})
			return
		}
		l.wait(name, mine, path)
	})
}

// cleanupAttempt deletes the nodes an attempt with prefix may have made
// in dir on session sess (after a lost reply too: by prefix and owner).
// Nothing to do on another session: sess's ephemerals went with it. A
// listing an ACL refuses (an operator closed dir) fails the cleanup with
// task.ErrNoAuth and runs it again in the background until the ACL lets
// it or the session ends (zkops.Refusable): the node would otherwise
// keep every contender of the item waiting until the session ends.
func cleanupAttempt(dir, prefix string, sess task.Session) task.Task[task.Unit] {
	return zkops.Refusable(cleanupOwned(dir, prefix, sess))
}

// cleanupOwned is cleanupAttempt without the runs again.
func cleanupOwned(dir, prefix string, sess task.Session) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		task.Run(s, zkops.Owned(dir, prefix, sess.ID), func(ms []zkops.Match, err error) {
			if err != nil {
				k(task.Unit{}, endedOK(err))
				return
			}
			d := &ownedDeletes{s: s, k: k, dir: dir, ms: ms}
			d.next(0)
		})
	}
}

// ownedDeletes deletes the nodes cleanupOwned found, one after another,
// the first failure ending it; the continuation of each delete is made
// once.
type ownedDeletes struct {
	s     *task.Scope
	k     task.Cont[task.Unit]
	dir   string
	ms    []zkops.Match
	i     int // the delete under way
	onDel task.Cont[task.Unit]
}

func (d *ownedDeletes) next(i int) {
	if i == len(d.ms) {
		d.k(task.Unit{}, nil)
		return
	}
	d.i = i
	if d.onDel == nil {
		d.onDel = d.deleted
	}
	task.Run(d.s, zkops.DeleteNode(d.dir+"/"+d.ms[i].Name, d.ms[i].Stat), d.onDel)
}

func (d *ownedDeletes) deleted(_ task.Unit, err error) {
	if err != nil {
		d.k(task.Unit{}, endedOK(err))
		return
	}
	d.next(d.i + 1)
}

// endedOK turns the end of the session into success for a cleanup: the
// session's ephemeral nodes went with it.
func endedOK(err error) error {
	if errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
		return nil
	}
	return err
}

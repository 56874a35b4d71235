package election

import (
	"errors"
	"fmt"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Master is the simpler "/master" pattern: whoever creates one ephemeral
// node leads; the others watch it and run again when it is deleted. Every
// waiter is woken by a deletion (a herd, bounded by the number of
// candidates); use Election for many candidates. A Master holds no state
// of its own. The tasks of a nil or zero Master (not made by NewMaster)
// fail with task.ErrInvalidPath.
//
// A master node at a fixed path starts at version 0 in every incarnation
// and so names no master: a check on it passes for every master. So each
// master also holds a lease: an ephemeral node named by its session's id
// and its campaign's random id in the directory PATH+LeasesSuffix, created in the same multi
// as the master node, which also deletes every lease left in that
// directory and moves the directory's version from the one its listing
// saw (so it is refused if a lease came after the listing). Fenced writes and Resign's delete check the lease: once
// anyone else has become master, the lease is gone, and ZooKeeper refuses
// them.
type Master struct {
	path   string
	leases string
	cfg    config
}

// LeasesSuffix is appended to a Master's path to name the directory of
// its leases (persistent; it holds at most the current master's lease and
// those of masters whose nodes an operator removed by hand). Never delete
// that directory while masters run: its version fences a former master's
// late delete of the node, and made again it starts over (PROTOCOL.md,
// Master protocol).
const LeasesSuffix = ".leases"

// NewMaster returns the master election on node path (its parent is
// created, persistent, on first use, and so is the lease directory
// path+LeasesSuffix). The options are New's.
func NewMaster(path string, opts ...Option) (*Master, error) {
	if err := task.ValidatePath(path, false); err != nil {
		return nil, fmt.Errorf("election: master node %q: %w", path, err)
	}
	if path == "/" {
		return nil, fmt.Errorf("election: master node %q: %w", path, task.ErrInvalidPath)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Master{path: path, leases: path + LeasesSuffix, cfg: cfg}, nil
}

// Path is the master node's path.
func (m *Master) Path() string { return m.path }

// LeasesPath is the directory of the masters' leases.
func (m *Master) LeasesPath() string { return m.leases }

// Campaign returns a task that waits until this candidate is master and
// succeeds with its leadership. See the package documentation for the
// protocol. It fails with the scope's error on deadline or cancel (a
// master node of ours is then deleted by a cleanup that outlives the
// deadline and retries past connection loss), with task.ErrSessionExpired
// when the session ends, or with an operation's error a retry cannot
// settle (a watch another user of the session removes is not one: the
// candidate reads again).
func (m *Master) Campaign() task.Task[*Leadership] {
	if m == nil || m.path == "" {
		return task.Fail[*Leadership](errZero("Master"))
	}
	return func(s *task.Scope, k task.Cont[*Leadership]) {
		sc := s.Child()
		// The lease's name starts with the session's id: two sessions never
		// name a lease alike, even with the same random draws (processes
		// started with one executor seed), so a lease found by name after a
		// lost reply is this campaign's or no one's.
		id := fmt.Sprintf("%016x-%s", s.Session().ID, zkops.NewID(s.Rand(), s.Rand()))
		r := &run{m: m, s: sc, sess: s.Session(), lease: m.leases + "/" + id, b: followBlinks(sc), began: s.Now()}
		// A cleanup an operator's ACL refuses goes on in the background
		// until allowed (zkops.Refusable).
		r.undo = sc.Defer(zkops.Refusable(r.cleanup()))
		task.RunIn(sc, task.Task[*Leadership](func(_ *task.Scope, k task.Cont[*Leadership]) {
			r.k = k
			r.create()
		}), until(r.b, k))
	}
}

// run is one campaign for the master node. Executor goroutine.
type run struct {
	m     *Master
	s     *task.Scope
	sess  task.Session
	began time.Time // on the executor's clock, for the Observer
	// lease is this campaign's lease node: created with the master node,
	// so a lost reply is settled by reading it.
	lease string
	undo  func()
	k     task.Cont[*Leadership]
	b     *blinks
	// retried: a create was sent before whose outcome is unknown
	retried bool
}

func (r *run) fail(err error) { task.Resume(r.s, r.k, nil, err) }

// create tries to become master: list the leases, then one multi moves
// the lease directory's version from the one the listing saw, deletes the
// leases listed, creates the master node and creates our lease. A version
// moved meanwhile (a lease made after the listing, or a listing answered
// by a member lagging behind the leader) or a lease already gone: list
// again. NodeExists on the master node: watch it. A missing parent or
// lease directory: create them. A lost reply: read the nodes to learn who
// made the master node.
//
// A listing that missed a lease and a multi that left it would let that
// lease's master, deposed by an operator who removed its node, pass its
// fenced writes beside ours: the version makes every multi's listing
// exactly the leases there are when it is applied, with no sync before.
func (r *run) create() {
	task.Run(r.s, c.Retry(task.Children(r.m.leases), retry), func(cl task.ChildList, err error) {
		switch {
		case errors.Is(err, task.ErrNoNode):
			r.ensure()
			return
		case err != nil:
			r.fail(err)
			return
		}
		if cl.Stat.Version == task.AnyVersion && !canary.On(bugUnversionedMulti) {
			r.bump() // the version wrapped to the one a check ignores
			return
		}
		ops := make([]task.MultiOp, 0, len(cl.Names)+3)
		if !canary.On(bugUnversionedMulti) {
			// Every campaign's multi moves the directory's version from
			// the one its listing saw: a lease created after our listing
			// (a campaign that led, whose master node an operator then
			// removed, letting ours be created) fails this multi, and we
			// list again, instead of leaving that master's lease to pass
			// its fenced writes beside ours.
			ops = append(ops, &task.SetDataRequest{Path: r.m.leases, Version: cl.Stat.Version})
		}
		for _, n := range cl.Names {
			ops = append(ops, &task.DeleteRequest{Path: r.m.leases + "/" + n, Version: task.AnyVersion})
		}
		nodeAt := len(ops)
		ops = append(ops,
			&task.CreateRequest{Path: r.m.path, Data: r.m.cfg.data, Mode: task.Ephemeral, ACL: r.m.cfg.acl.For(r.m.path)},
			&task.CreateRequest{Path: r.lease, Mode: task.Ephemeral, ACL: r.m.cfg.acl.For(r.lease)})
		task.Run(r.s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
			if err == nil {
				r.verify()
				return
			}
			var me *task.MultiError
			switch {
			case errors.As(err, &me) && me.Index < nodeAt && (errors.Is(me.Err, task.ErrBadVersion) || errors.Is(me.Err, task.ErrNoNode)):
				r.create() // a lease came or went meanwhile: list again
			case errors.As(err, &me) && errors.Is(me.Err, task.ErrNodeExists):
				r.watch()
			case errors.As(err, &me) && errors.Is(me.Err, task.ErrNoNode):
				r.ensure()
			case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
				r.retried = true
				r.watch()
			default:
				r.fail(err)
			}
		})
	})
}

// bump moves the lease directory's version off -1 (AnyVersion: a check
// at -1 passes whatever the version), where 2^32 campaigns' multis leave
// it, then tries again.
func (r *run) bump() {
	task.Run(r.s, c.Retry(task.Set(r.m.leases, nil, task.AnyVersion), retry), func(_ task.Stat, err error) {
		if err != nil && !errors.Is(err, task.ErrNoNode) {
			r.fail(err)
			return
		}
		r.create()
	})
}

// ensure creates the lease directory and its ancestors, then tries again.
func (r *run) ensure() {
	task.Run(r.s, zkops.EnsurePath(r.m.leases, r.m.cfg.acl), func(_ task.Unit, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		r.create()
	})
}

// watch reads the master node with a watch. Missing: create again. Made
// by this campaign (a create whose reply was lost; our lease says so):
// lead. Anyone else's, also another campaign's on our session: wait until
// it changes, then run again.
func (r *run) watch() {
	at := r.b.n
	task.Run(r.s, c.Retry(task.ExistsW(r.m.path), retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			r.fail(err)
		case sw.Stat == nil:
			r.create()
		case sw.Stat.EphemeralOwner == r.sess.ID || (canary.On(bugSkipOwnerCheck) && r.retried):
			st := *sw.Stat
			task.Run(r.s, c.Retry(task.Exists(r.lease), retry), func(ls *task.Stat, err error) {
				switch {
				case err != nil:
					r.fail(err)
				case r.b.n != at:
					r.watch() // read before a suspension: read again
				case canary.On(bugSkipOwnerCheck) && r.retried:
					// the bug: after a lost reply, a master node is
					// taken to be the one our create made
					r.granted(st)
				case r.made(st, ls) || canary.On(bugSiblingShares):
					r.granted(st)
				case r.retried:
					// Ours, perhaps made by our multi, but our lease is not
					// its (someone removed or replaced it): no one could
					// tell, so nobody would delete it. Remove it and run
					// again, unless another campaign of the session leads
					// with it (its lease vouches for it).
					r.replaceUnlessSibling(st, sw.Watch)
				default:
					r.await(sw.Watch)
				}
			})
		default:
			r.await(sw.Watch)
		}
	})
}

// made reports whether the master node st was created by this campaign's
// multi: it is our session's, and our lease exists, created in the same
// transaction (its czxid is the node's).
func (r *run) made(st task.Stat, lease *task.Stat) bool {
	return lease != nil && st.EphemeralOwner == r.sess.ID && lease.EphemeralOwner == r.sess.ID && lease.Czxid == st.Czxid
}

func (r *run) await(w *task.Watch) {
	r.retried = false
	task.Run(r.s, w.Wait(), func(_ task.Event, err error) {
		// A watch another user of the session took away (RemoveWatches:
		// a cache of the master node stopping) is one more wake-up:
		// try again, which reads the node again.
		if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
			r.fail(err)
			return
		}
		r.create()
	})
}

// verify reads the node and the lease our multi created and leads only
// if they are still that multi's, owned by our session, still the
// executor's current one, and were read after the last suspension.
func (r *run) verify() {
	at := r.b.n
	task.Run(r.s, c.Retry(task.Exists(r.m.path), retry), func(st *task.Stat, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		if st == nil {
			r.create()
			return
		}
		task.Run(r.s, c.Retry(task.Exists(r.lease), retry), func(ls *task.Stat, err error) {
			switch {
			case err != nil:
				r.fail(err)
			case r.b.n != at:
				r.verify() // read before a suspension: read again
			case canary.On(bugSkipOwnerCheck) || (r.made(*st, ls) && r.s.IsCurrent(r.sess)):
				r.granted(*st)
			case st.EphemeralOwner == r.sess.ID && !r.made(*st, ls):
				r.replaceUnlessSibling(*st, nil) // our multi's node, its lease removed or replaced
			default:
				r.watch()
			}
		})
	})
}

// replaceUnlessSibling replaces the master node st of our session
// (replace) unless a lease of our session vouches for it (created in its
// transaction: the same czxid): then it is another campaign's of this
// session (two goroutines on one Client, say), which leads with it, and
// this one waits for it to change (w, or a new read if w is nil).
func (r *run) replaceUnlessSibling(st task.Stat, w *task.Watch) {
	if canary.On(bugReplaceSibling) {
		r.replace(st)
		return
	}
	task.Run(r.s, siblingVouches(r.m, r.sess, st), func(sibling bool, err error) {
		switch {
		case err != nil:
			r.fail(err)
		case !sibling:
			r.replace(st)
		case w != nil:
			r.await(w)
		default:
			r.watch()
		}
	})
}

// replace deletes a master node of our session that no lease of ours
// vouches for (this incarnation only: zkops.DeleteNode), then runs again;
// the next multi deletes whatever stands at our lease's path.
func (r *run) replace(st task.Stat) {
	r.retried = false
	task.Run(r.s, deleteMasterNode(r.m.path, r.m.leases, st), func(_ task.Unit, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		r.create()
	})
}

func (r *run) granted(st task.Stat) {
	r.undo()
	l := r.m.cfg.newLeadership(r.m.path, st, r.sess)
	l.lease = r.lease
	l.start(r.s)
	l.observe(r.s, r.began)
	task.Resume(r.s, r.k, l, nil)
}

// cleanup deletes what a campaign that did not end in leadership may have
// created (a create whose reply was lost, or leadership found as the
// scope ended): the master node if our multi made it, and our lease. It
// runs as a flow of its own.
//
// It reads the master node after a sync: a session that comes back after
// a lost reply may talk to a member that has not applied our multi, whose
// read would show no node; the cleanup would then delete the lease alone
// and leave a node that no lease vouches for, which every campaign waits
// for until the session ends.
func (r *run) cleanup() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != r.sess.Epoch {
			k(task.Unit{}, nil) // the session ended: its ephemerals went with it
			return
		}
		read := task.Exists(r.m.path)
		if !canary.On(bugCleanupUnsynced) {
			read = zkops.AfterSync(r.m.path, read)
		}
		task.Run(s, c.Retry(read, retry), func(st *task.Stat, err error) {
			if err != nil || st == nil || st.EphemeralOwner != r.sess.ID {
				task.Run(s, c.Then(goneOK(err), func(task.Unit) task.Task[task.Unit] {
					return zkops.DeleteOwned(r.lease, r.sess.ID)
				}), k)
				return
			}
			task.Run(s, c.Retry(task.Exists(r.lease), retry), func(ls *task.Stat, err error) {
				switch {
				case err != nil:
					task.Run(s, c.Then(goneOK(err), func(task.Unit) task.Task[task.Unit] {
						return zkops.DeleteOwned(r.lease, r.sess.ID)
					}), k)
				case !r.made(*st, ls):
					// A node of our session that our lease does not vouch
					// for (an operator removed or replaced the lease after
					// our multi): it leads no one, and nobody else may
					// delete it, so every later campaign, this session's
					// included, would wait for it until the session ends.
					// Delete it unless a sibling campaign's lease vouches
					// for it.
					task.Run(s, c.Seq(zkops.DeleteOwned(r.lease, r.sess.ID), deleteUnvouched(r.m, r.sess, *st)), k)
				default:
					task.Run(s, deleteMaster(r.m.path, r.lease, *st, false), k)
				}
			})
		})
	}
}

// deleteUnvouched deletes the master node st, of session sess, unless a
// sibling campaign's lease vouches for it (siblingVouches); that
// incarnation only (zkops.DeleteNode).
func deleteUnvouched(m *Master, sess task.Session, st task.Stat) task.Task[task.Unit] {
	return c.Then(siblingVouches(m, sess, st), func(sibling bool) task.Task[task.Unit] {
		if sibling {
			return task.Done
		}
		return deleteMasterNode(m.path, m.leases, st)
	})
}

// siblingVouches reports whether a lease of session sess vouches for the
// master node st (created in its multi: the same czxid), which makes it
// another campaign's of that session.
func siblingVouches(m *Master, sess task.Session, st task.Stat) task.Task[bool] {
	return func(s *task.Scope, k task.Cont[bool]) {
		task.Run(s, c.Retry(task.Children(m.leases), retry), func(cl task.ChildList, err error) {
			if err != nil && !errors.Is(err, task.ErrNoNode) {
				k(false, err)
				return
			}
			var look func(i int)
			look = func(i int) {
				if i == len(cl.Names) {
					k(false, nil)
					return
				}
				task.Run(s, c.Retry(task.Exists(m.leases+"/"+cl.Names[i]), retry), func(ls *task.Stat, err error) {
					switch {
					case err != nil:
						k(false, err)
					case ls != nil && ls.EphemeralOwner == sess.ID && ls.Czxid == st.Czxid:
						k(true, nil)
					default:
						look(i + 1)
					}
				})
			}
			look(0)
		})
	}
}

func goneOK(err error) task.Task[task.Unit] {
	if err == nil {
		return task.Done
	}
	return zkops.GoneOK(err)
}

// deleteMaster deletes the master node st and its lease: one multi checks
// the lease and deletes both, so it is refused once anyone else has
// become master (their multi deleted our lease). It is retried as it is
// after a lost reply: if the first was applied, the retry finds the lease
// gone (no other session can create a lease of that name: it starts with
// our session's id). A lease gone while the node is still ours (an operator removed
// the lease) falls back to deleting the node only if it is still the
// incarnation st (zkops.DeleteNode); a node already gone leaves the lease
// to be deleted alone.
//
// The multi deletes the node whatever its incarnation: our lease proves
// that no other candidate has become master, not that the node is still
// ours. When the leadership has ended by a loss (its node deleted or
// written by someone else: an operator may have made the node again by
// hand), safe has it read the node first and delete it only if it is the
// incarnation st, else the lease alone.
func deleteMaster(path, lease string, st task.Stat, safe bool) task.Task[task.Unit] {
	multi := c.Retry(task.Multi(
		&task.CheckRequest{Path: lease, Version: 0},
		&task.DeleteRequest{Path: path, Version: task.AnyVersion},
		&task.DeleteRequest{Path: lease, Version: task.AnyVersion},
	), retry)
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if safe {
			task.Run(s, c.Retry(task.Exists(path), retry), func(cur *task.Stat, err error) {
				switch {
				case err != nil:
					task.Run(s, zkops.GoneOK(err), k)
				case cur == nil || cur.Czxid != st.Czxid || cur.EphemeralOwner != st.EphemeralOwner:
					task.Run(s, zkops.DeleteOwned(lease, st.EphemeralOwner), k) // not ours: the lease only
				default:
					deleteMaster(path, lease, st, false)(s, k)
				}
			})
			return
		}
		task.Run(s, multi, func(_ []task.MultiResult, err error) {
			if err == nil {
				k(task.Unit{}, nil)
				return
			}
			var me *task.MultiError
			switch {
			case errors.As(err, &me) && me.Index == 1 && errors.Is(me.Err, task.ErrNoNode):
				task.Run(s, zkops.DeleteOwned(lease, st.EphemeralOwner), k) // the node went already
			case errors.As(err, &me) && canary.On(bugResignDeletesAny):
				task.Run(s, c.Retry(task.Delete(path, task.AnyVersion), retry), func(_ task.Unit, err error) {
					task.Run(s, zkops.GoneOK(err), k)
				})
			case errors.As(err, &me):
				task.Run(s, deleteMasterNode(path, task.Parent(lease), st), k)
			default:
				task.Run(s, zkops.GoneOK(err), k)
			}
		})
	}
}

// deleteMasterNode deletes the master node at path if it is still the
// incarnation st, behind a check of the leases directory's version
// (leases): every campaign that makes the node moves that version in its
// multi, so a delete sent after its read never removes a node a later
// campaign made. A delete at the version read alone could
// (zkops.DeleteNode's window), and two cleanups of one node open that
// window with no operator: the first deletes the node, a campaign makes
// it again, at version 0, and the second's delete, sent late, removes it
// (master seed 6481852880270: two acting masters). A node gone, or
// another incarnation, is success; a directory moved since the read
// has it read both again. With no leases directory, or a delete an ACL
// refuses, it falls back to zkops.DeleteNode (which goes on in the
// background until the ACL lets it).
func deleteMasterNode(path, leases string, st task.Stat) task.Task[task.Unit] {
	var again task.Task[task.Unit]
	again = func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, c.Retry(task.Exists(leases), retry), func(dir *task.Stat, err error) {
			switch {
			case err != nil:
				task.Run(s, zkops.GoneOK(err), k)
				return
			case dir == nil:
				task.Run(s, zkops.DeleteNode(path, st), k)
				return
			}
			task.Run(s, c.Retry(task.Exists(path), retry), func(cur *task.Stat, err error) {
				switch {
				case err != nil:
					task.Run(s, zkops.GoneOK(err), k)
					return
				case cur == nil || cur.Czxid != st.Czxid || cur.EphemeralOwner != st.EphemeralOwner:
					k(task.Unit{}, nil) // gone, or not ours
					return
				}
				del := c.Retry(task.Multi(
					&task.CheckRequest{Path: leases, Version: dir.Version},
					&task.DeleteRequest{Path: path, Version: cur.Version},
				), retry)
				task.Run(s, del, func(_ []task.MultiResult, err error) {
					if err == nil {
						k(task.Unit{}, nil)
						return
					}
					var me *task.MultiError
					switch {
					case errors.Is(err, task.ErrNoAuth):
						task.Run(s, zkops.DeleteNode(path, st), k)
					case errors.As(err, &me) && me.Index == 1 && errors.Is(me.Err, task.ErrNoNode):
						k(task.Unit{}, nil) // gone (our own delete, its reply lost, or another's)
					case errors.As(err, &me):
						again(s, k) // the directory or the node moved: read again
					default:
						task.Run(s, zkops.GoneOK(err), k)
					}
				})
			})
		})
	}
	return again
}

// Leader returns a task that reads the master node's data, or fails with
// ErrNoLeader when there is no master.
func (m *Master) Leader() task.Task[[]byte] {
	if m == nil || m.path == "" {
		return task.Fail[[]byte](errZero("Master"))
	}
	get := c.Map(c.Retry(task.Get(m.path), retry), func(d task.Data) []byte { return d.Data })
	return c.Catch(get, func(err error) task.Task[[]byte] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Fail[[]byte](fmt.Errorf("election: %s: %w", m.path, ErrNoLeader))
		}
		return task.Fail[[]byte](err)
	})
}

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

// retry is the recipes' shared policy for single operations whose outcome
// a retry settles (connection loss, not sent); see zkops.Retry.
var retry = zkops.Retry

// Election is leader election among candidates under one ZooKeeper
// directory. An Election holds no state of its own: every Campaign is a
// new candidate, so one Election may be shared by any number of flows and
// executors. The tasks of a nil or zero Election (not made by New: its
// directory "") fail with task.ErrInvalidPath, as New("") does.
type Election struct {
	dir string
	cfg config
}

// New returns the election whose candidates live under dir. The directory
// and its ancestors are created (persistent) on first use. A bad option
// fails with task.ErrInvalidArgument (task.ErrDataTooLarge for WithData).
func New(dir string, opts ...Option) (*Election, error) {
	if err := task.ValidatePath(dir, false); err != nil {
		return nil, fmt.Errorf("election: directory %q: %w", dir, err)
	}
	if dir == "/" {
		return nil, fmt.Errorf("election: directory %q: %w", dir, task.ErrInvalidPath)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Election{dir: dir, cfg: cfg}, nil
}

// Dir is the election's directory.
func (e *Election) Dir() string { return e.dir }

func (e *Election) child(name string) string { return e.dir + "/" + name }

// Campaign returns a task that waits until this candidate leads and
// succeeds with its leadership. See the package documentation for the
// protocol. It fails with the scope's error when the scope's deadline
// passes or it is canceled, with task.ErrSessionExpired when the session
// ends (the candidate node went with it), with ErrLost when someone else
// deleted the candidate node, or with an operation's error that a retry
// cannot settle. In every failure the candidate node, if it was created,
// is deleted by a cleanup flow of its own that outlives the deadline and
// retries past connection loss.
func (e *Election) Campaign() task.Task[*Leadership] {
	if e == nil || e.dir == "" {
		return task.Fail[*Leadership](errZero("Election"))
	}
	return func(s *task.Scope, k task.Cont[*Leadership]) {
		sc := s.Child()
		a := &attempt{e: e, s: sc, sess: s.Session(), began: s.Now()}
		a.prefix = prefix(newID(zkops.Draws(s)))
		a.undo = sc.Defer(zkops.Refusable(a.cleanup()))
		a.b = followBlinks(sc)
		task.RunIn(sc, task.Task[*Leadership](a.run), until(a.b, k))
	}
}

// attempt is one candidate: its unique prefix, and once known the node's
// name. It lives on the executor goroutine.
type attempt struct {
	e      *Election
	s      *task.Scope
	began  time.Time    // on the executor's clock, for the Observer
	sess   task.Session // the session the candidate node belongs to
	prefix string
	undo   func() // withdraws the cleanup once leadership is granted
	k      task.Cont[*Leadership]
	name   string
	b      *blinks
}

func (a *attempt) run(s *task.Scope, k task.Cont[*Leadership]) {
	a.k = k
	a.create()
}

func (a *attempt) fail(err error) { task.Resume(a.s, a.k, nil, err) }

func (a *attempt) lost(what string) {
	a.fail(fmt.Errorf("election: %w: %s", ErrLost, what))
}

// create makes the candidate node (zkops.CreateUnique). A lost reply
// (connection loss) is settled by looking for our prefix: if a child with
// it exists and belongs to our session, the create was applied and that is
// our node; otherwise it was not, and we create again. A missing directory
// is created.
func (a *attempt) create() {
	path := a.e.child(a.prefix)
	req := &task.CreateRequest{Path: path, Data: a.e.cfg.data, Mode: task.EphemeralSequential, ACL: a.e.cfg.acl.For(path)}
	settle := func() task.Task[[]string] { return ours(a.e, a.prefix, a.sess.ID) }
	task.Run(a.s, zkops.CreateUnique(req, a.e.dir, a.e.cfg.acl, settle), func(name string, err error) {
		switch {
		case errors.Is(err, task.ErrNodeExists):
			// A sequential create clashes only when the counter is stuck
			// at its maximum (zkops.Exhausted): wait for the reset.
			a.afterReset()
		case err != nil:
			a.fail(err)
		default:
			a.found(name)
		}
	})
}

func (a *attempt) found(name string) {
	seq, ok := seqOf(name)
	if !ok {
		a.fail(fmt.Errorf("election: server named the candidate %q: no sequence after %q", name, tag))
		return
	}
	a.name = name
	if zkops.Exhausted(seq) && !canary.On(bugExhaustedSeq) {
		a.restart()
		return
	}
	a.check()
}

// restart withdraws a candidate whose number is exhausted (the directory's
// counter ran out: see zkops.Exhausted) and campaigns again once the
// directory has been emptied and recreated, its counter back at zero.
// Candidates queued below the maximum are served first, in order.
func (a *attempt) restart() {
	task.Run(a.s, zkops.DeleteOwned(a.e.child(a.name), a.sess.ID), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.name = ""
		a.afterReset()
	})
}

// afterReset campaigns again once the directory has been emptied and
// recreated (its counter back at zero).
func (a *attempt) afterReset() {
	task.Run(a.s, zkops.EmptyDir(a.e.dir), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.create()
	})
}

// check lists the children without a watch: the lowest candidate leads
// (once its owner is checked); every other waits for the next lower one
// only. The listing, and the read of our node that a grant rests on,
// follow a sync: the session's server may lag behind the leader, and a
// stale read could show our node first, or show it as ours, after
// someone deleted it (and an operator made another at its path, which
// our fenced writes' version check cannot tell from ours). The sync, the
// listing and the read are sent together (readQueue): a session's
// requests are served in the order they were sent, so each is answered
// from a state no older than the one before it, as if each had waited
// for the reply before it, in one round trip instead of three.
func (a *attempt) check() {
	path := a.e.child(a.name)
	at := a.b.n
	task.Run(a.s, c.Retry(a.readQueue(path), retry), func(rq queueRead, err error) {
		if err != nil {
			if errors.Is(err, task.ErrNoNode) {
				err = fmt.Errorf("election: %w: directory %s deleted", ErrLost, a.e.dir)
			}
			a.fail(err)
			return
		}
		q := queue(rq.names)
		i := -1
		for j, ct := range q {
			if ct.Name == a.name {
				i = j
				break
			}
		}
		switch {
		case i < 0:
			a.lost(fmt.Sprintf("candidate %s deleted while waiting", path))
		case i == 0:
			a.grant(path, rq.own, at)
		case canary.On(bugWatchLowest):
			a.waitFor(a.e.child(q[0].Name))
		default:
			a.waitFor(a.e.child(q[i-1].Name))
		}
	})
}

// queueRead is what readQueue read: the directory's children, then our
// node's Stat (nil if it is gone).
type queueRead struct {
	names []string
	own   *task.Stat
}

// readQueue sends a sync of the directory, a listing of it and an exists
// of our node at once, in that order, and succeeds with the listing and
// the read once every reply is in; the first error fails it.
func (a *attempt) readQueue(path string) task.Task[queueRead] {
	ts := []task.Task[queueRead]{
		c.Map(task.Sync(a.e.dir), func(task.Unit) queueRead { return queueRead{} }),
		c.Map(task.Children(a.e.dir), func(cl task.ChildList) queueRead { return queueRead{names: cl.Names} }),
		c.Map(task.Exists(path), func(st *task.Stat) queueRead { return queueRead{own: st} }),
	}
	if canary.On(bugGrantWithoutSync) {
		ts = ts[1:]
	}
	return c.Map(c.All(ts...), func(rs []queueRead) queueRead {
		n := len(rs)
		return queueRead{names: rs[n-2].names, own: rs[n-1].own}
	})
}

// waitFor watches pred with exists; when it is gone (already, or later)
// or its watch fires, list again (zkops.WaitChange).
func (a *attempt) waitFor(pred string) {
	task.Run(a.s, zkops.WaitChange(pred), func(_ bool, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.check()
	})
}

// grant grants leadership on the read of our node that followed the
// listing (st, read at suspension count at): only if the node exists and
// its ephemeral owner is the session we are running on, which is still
// the executor's current one, and no suspension came since the read was
// sent (then list and read again).
func (a *attempt) grant(path string, st *task.Stat, at int) {
	switch {
	case a.b.n != at:
		a.check() // read before a suspension: list and read again
	case st == nil:
		a.lost(fmt.Sprintf("candidate %s deleted", path))
	case !canary.On(bugSkipOwnerCheck) && (st.EphemeralOwner != a.sess.ID || !a.s.IsCurrent(a.sess)):
		a.lost(fmt.Sprintf("candidate %s owned by session %#x, not ours (%#x)", path, st.EphemeralOwner, a.sess.ID))
	default:
		a.undo()
		l := a.e.cfg.newLeadership(path, *st, a.sess)
		seq, _ := seqOf(a.name)
		l.resetDir = seq >= zkops.ResetAbove
		l.start(a.s)
		l.observe(a.s, a.began)
		task.Resume(a.s, a.k, l, nil)
	}
}

// cleanup deletes the candidate node of a failed attempt. It runs as a
// flow of its own (Scope.Defer), without the caller's deadline. If the
// node's name is not known (the create's reply was lost), it deletes the
// children with our prefix that belong to the attempt's session. If that
// session has ended, its ephemeral nodes went with it: nothing to do.
func (a *attempt) cleanup() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != a.sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		if a.name != "" {
			task.Run(s, zkops.DeleteOwned(a.e.child(a.name), a.sess.ID), k)
			return
		}
		task.Run(s, ours(a.e, a.prefix, a.sess.ID), func(names []string, err error) {
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			paths := make([]string, len(names))
			for i, n := range names {
				paths[i] = a.e.child(n)
			}
			owner := a.sess.ID
			task.Run(s, zkops.DeleteEach(paths, func(p string) task.Task[task.Unit] { return zkops.DeleteOwned(p, owner) }), k)
		})
	}
}

// Leader returns a task that reads the data of the current leader (the
// lowest candidate), or fails with ErrNoLeader. A candidate that goes
// between the listing and the read is skipped by listing again.
func (e *Election) Leader() task.Task[[]byte] {
	if e == nil || e.dir == "" {
		return task.Fail[[]byte](errZero("Election"))
	}
	var try task.Task[[]byte]
	try = func(s *task.Scope, k task.Cont[[]byte]) {
		task.Run(s, c.Retry(task.Children(e.dir), retry), func(cl task.ChildList, err error) {
			if errors.Is(err, task.ErrNoNode) {
				k(nil, fmt.Errorf("election: %s: %w", e.dir, ErrNoLeader))
				return
			}
			if err != nil {
				k(nil, err)
				return
			}
			q := queue(cl.Names)
			if len(q) == 0 {
				k(nil, fmt.Errorf("election: %s: %w", e.dir, ErrNoLeader))
				return
			}
			task.Run(s, c.Retry(task.Get(e.child(q[0].Name)), retry), func(d task.Data, err error) {
				if errors.Is(err, task.ErrNoNode) {
					task.Run(s, try, k)
					return
				}
				k(d.Data, err)
			})
		})
	}
	return try
}

// ours returns e's children named with prefix whose ephemeral owner is
// session id (zkops.Owned). A missing directory has none.
func ours(e *Election, prefix string, id int64) task.Task[[]string] {
	if canary.On(bugSkipOwnerCheck) {
		return zkops.Prefixed(e.dir, prefix)
	}
	return c.Map(zkops.Owned(e.dir, prefix, id), zkops.Names)
}

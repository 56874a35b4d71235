package fakezk

import (
	"bytes"
	"errors"
	"slices"

	"github.com/zkflow/zkflow/task"
)

// pending is a request the client has sent and the server not yet applied.
type pending struct {
	id    uint64
	req   task.Request
	done  func(task.Response)
	zdone func(task.Response, int64) // Send's done, instead of done
	watch func(task.Event)
}

func isWrite(req task.Request) bool {
	switch req.(type) {
	case *task.CreateRequest, *task.DeleteRequest, *task.SetDataRequest, *task.SetACLRequest, *task.MultiRequest:
		return true
	}
	return false
}

// apply runs p on the server for c's session and queues the response. lost
// says the response never reaches the client: it gets ErrConnectionLoss and,
// since a client registers a watch only on a reply, no watch is set.
func (s *Server) apply(c *Conn, p *pending, lost bool) {
	sess, who := c.sess, c.who
	var resp task.Response
	var tx *txn
	var txv txn
	if isWrite(p.req) {
		// Every write takes a zxid, also when it fails (an error txn).
		s.zxid++
		txv = txn{zxid: s.zxid, session: sess.id, now: s.nowMillis(), fires: s.takeFires()}
		_, txv.multi = p.req.(*task.MultiRequest)
		tx = &txv
		s.takeBufs(tx)
	}
	var w *watch
	if c.lagging && !lost {
		if s.serveStale(c, p) {
			return
		}
		if tx == nil && !isRead(p.req) {
			c.catchUp() // a member that has applied everything answers it
		}
	}
	switch r := p.req.(type) {
	case *task.CreateRequest:
		resp.Path, resp.Stat, resp.Err = s.create(tx, sess, who, r)
	case *task.DeleteRequest:
		resp.Err = s.delete(tx, who, r)
	case *task.SetDataRequest:
		resp.Stat, resp.Err = s.setData(tx, who, r)
	case *task.SetACLRequest:
		resp.Stat, resp.Err = s.setACL(tx, who, r)
	case *task.MultiRequest:
		resp.Results, resp.Err = s.multi(tx, sess, who, r)
	case *task.ExistsRequest:
		// exists checks no ACL (FinalRequestProcessor), and its watch is
		// set whatever the node's ACL says.
		n := s.tree.lookup(r.Path)
		if n == nil {
			resp.Err = task.ErrNoNode
			if r.Watch {
				w = &watch{path: r.Path, kind: kindExist}
			}
		} else {
			resp.Stat = n.clientStat()
			if r.Watch {
				w = &watch{path: r.Path, kind: kindData}
			}
		}
	case *task.GetDataRequest:
		n := s.tree.lookup(r.Path)
		switch {
		case n == nil:
			resp.Err = task.ErrNoNode
		case !allowed(n.acl, task.PermRead, who):
			resp.Err = task.ErrNoAuth
		default:
			resp.Data = bytes.Clone(n.data) // empty stays empty, null stays null
			resp.Stat = n.clientStat()
			if r.Watch {
				w = &watch{path: r.Path, kind: kindData}
			}
		}
	case *task.GetChildrenRequest:
		n := s.tree.lookup(r.Path)
		switch {
		case n == nil:
			resp.Err = task.ErrNoNode
		case !allowed(n.acl, task.PermRead, who):
			resp.Err = task.ErrNoAuth
		default:
			resp.Children = s.childNames(n)
			resp.Stat = n.clientStat()
			if r.Watch {
				w = &watch{path: r.Path, kind: kindChild}
			}
		}
	case *task.GetACLRequest:
		resp.ACL, resp.Stat, resp.Err = s.getACL(who, r)
	case *task.SyncRequest:
		resp.Path = r.Path
	case *task.CheckRequest:
		// ZooKeeper 3.8 knows check only inside a multi.
		resp.Err = task.ErrUnimplemented
	case *task.AddWatchRequest:
		// No ACL check and no need for the node to exist
		// (FinalRequestProcessor's addWatch); registered below, as a
		// one-time watch is, only if the reply reaches the client.
	case *task.RemoveWatchesRequest:
		if !lost { // a lost reply: the client keeps its watches and sets them again on reconnect
			resp.Err = s.removeWatches(c, r)
		}
	default:
		resp.Err = task.ErrBadArguments
	}
	ok := resp.Err == nil
	if lost {
		if s.trace.on {
			s.tracef("c%d apply #%d %s %s -> %s (reply lost)", c.num, p.id, p.req.OpName(), p.req.NodePath(), errString(resp.Err))
		}
		resp = task.Response{Err: task.ErrConnectionLoss}
		w = nil
	} else {
		c.lastZxid = s.zxid
		s.traceApply(c, p, &resp)
	}
	if w != nil && p.watch != nil {
		s.downgrade(sess, w.path, w.kind)
		s.addWatch(sess, w.path, w.kind, p.watch)
		compactWatches(sess)
	}
	if r, isAdd := p.req.(*task.AddWatchRequest); isAdd && !lost && p.watch != nil {
		s.addPersistent(sess, r.Path, r.Mode, p.watch)
	}
	// ZooKeeper's FinalRequestProcessor applies the txn (sending the
	// notifications it triggers, to this session too) before it sends the
	// reply: a session sees its own write's notifications first.
	if tx != nil {
		if ok {
			s.commit(tx)
		} else {
			s.journal(tx.zxid, tx.session) // an error txn: a zxid, no change
		}
		s.giveFires(tx.fires)
		s.giveBufs(tx)
	}
	if c.lagging {
		if tx != nil || isSync(p.req) {
			c.catchUp() // the member applied it, and all before it, before replying
		}
		if !lost {
			c.lastZxid = c.view
		}
	}
	s.enqueue(c, item{kind: itemResp, id: p.id, done: p.done, zdone: p.zdone, resp: resp})
}

// isRead reports a read a lagging member may answer from its view:
// exists, getData or getChildren (lag.go).
func isRead(req task.Request) bool {
	switch req.(type) {
	case *task.ExistsRequest, *task.GetDataRequest, *task.GetChildrenRequest:
		return true
	}
	return false
}

func isSync(req task.Request) bool {
	_, ok := req.(*task.SyncRequest)
	return ok
}

// childNames lists n's children in an order drawn from the seed: ZooKeeper
// promises no order, so neither does the fake (a missing sort in a caller
// shows up in simulation, not in production).
func (s *Server) childNames(n *node) []string {
	// Map order is random per process: start from the sorted names so the
	// seed alone decides.
	names := s.copyNames(n.childNames())
	s.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return names
}

// multi applies ops in order on the live tree, undoing everything if one
// fails. Results: the failing op's error, RolledBack for the ops before it,
// ErrRuntimeInconsistency for the ops after it (PrepRequestProcessor).
func (s *Server) multi(tx *txn, sess *session, who *principal, r *task.MultiRequest) ([]task.MultiResult, error) {
	res := s.newResults(len(r.Ops))
	remote := sess.conn != nil && sess.conn.remote
	for i, op := range r.Ops {
		var err error
		if remote {
			// Unchecked by the client (Conn.Send): checked here, as
			// PrepRequestProcessor checks each op of a multi.
			if err = s.remoteCheck(op); err != nil {
				if !errors.Is(err, task.ErrUnimplemented) {
					err = task.ErrBadArguments
				}
				op = nil
			}
		}
		switch o := op.(type) {
		case nil:
		case *task.CreateRequest:
			// A 3.8 server answers a multi's create by its mode: a
			// container or TTL one as create2 (the name and the Stat),
			// any other as create (the name alone, no Stat), whatever
			// opcode carried it.
			var st task.Stat
			res[i].Path, st, err = s.create(tx, sess, who, o)
			if o.Mode == task.Container || o.Mode.IsTTL() {
				res[i].Stat = st
			}
		case *task.DeleteRequest:
			err = s.delete(tx, who, o)
		case *task.SetDataRequest:
			res[i].Stat, err = s.setData(tx, who, o)
		case *task.CheckRequest:
			err = s.check(who, o)
		default:
			err = task.ErrBadArguments
		}
		if err != nil {
			s.rollback(tx)
			for j := range res {
				switch {
				case j < i:
					res[j] = task.MultiResult{RolledBack: true}
				case j == i:
					res[j] = task.MultiResult{Err: err}
				default:
					res[j] = task.MultiResult{Err: task.ErrRuntimeInconsistency}
				}
			}
			return res, err
		}
	}
	return res, nil
}

// namesChunk is how many names copyNames allocates at once.
const namesChunk = 256

// copyNames returns a copy of names (nil for nil), cut from a chunk of
// namesChunk unless names is long (one object per chunk rather than per
// listing: a chunk lives while one of its copies is referred to; none is
// ever used twice, and a copy's capacity is its length, so an append to
// it does not reach the next). Lock held.
func (s *Server) copyNames(names []string) []string {
	if len(names) == 0 || len(names) > namesChunk/4 {
		return slices.Clone(names) // nil stays nil, empty stays empty
	}
	out := s.spareNames.Cut(len(names), namesChunk)
	copy(out, names)
	return out
}

// resultChunk is how many multi results newResults allocates at once.
const resultChunk = 32

// newResults returns the zeroed results of a multi of n ops, cut from a
// chunk of resultChunk unless n is large (one object per chunk rather
// than per multi: a chunk lives while one of its lists is referred to;
// none is ever used twice, and a list's capacity is its length, so an
// append to it does not reach the next). Lock held.
func (s *Server) newResults(n int) []task.MultiResult {
	if n == 0 || n > resultChunk/4 {
		return make([]task.MultiResult, n) // empty, never nil
	}
	return s.spareResults.Cut(n, resultChunk)
}

// getACL is FinalRequestProcessor's getACL: the node must exist and the
// session hold READ or ADMIN on it; a session without ADMIN is shown the
// digest entries' ids as "user:x".
func (s *Server) getACL(who *principal, r *task.GetACLRequest) ([]task.ACL, task.Stat, error) {
	n := s.tree.lookup(r.Path)
	if n == nil {
		return nil, task.Stat{}, task.ErrNoNode
	}
	if !allowed(n.acl, task.PermRead|task.PermAdmin, who) {
		return nil, task.Stat{}, task.ErrNoAuth
	}
	if !allowed(n.acl, task.PermAdmin, who) {
		return wireACL(redactDigests(n.acl)), n.clientStat(), nil
	}
	return wireACL(slices.Clone(n.acl)), n.clientStat(), nil
}

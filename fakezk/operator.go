package fakezk

import (
	"time"

	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// An operator's hand on the tree, outside every client's session: what
// someone with zkCli does to the nodes a recipe owns. Each operation
// takes a zxid and fires watches as the same request from a client
// would, is recorded in the trace, and fails with task.ErrNotSent while
// the server is down. The operator is the super user: no ACL stops it.
// Safe to call from any goroutine, not from a Conn callback.

// AdminDelete deletes the node at path whatever its version (ErrNoNode if
// there is none, ErrNotEmpty if it has children).
func (s *Server) AdminDelete(path string) error {
	return s.admin(&task.DeleteRequest{Path: path, Version: task.AnyVersion}, nil)
}

// AdminCreate creates path with data: a persistent node when session is
// 0, else an ephemeral owned by the session of that id (a live session's id, as
// OrphanSession returns; ErrSessionExpired if it is not live).
func (s *Server) AdminCreate(path string, data []byte, owner int64) error {
	req := &task.CreateRequest{Path: path, Data: data, Mode: task.Persistent, ACL: task.OpenACL}
	var sess *session
	if owner != 0 {
		req.Mode = task.Ephemeral
		s.mu.Lock()
		sess = s.sessions[owner]
		s.mu.Unlock()
		if sess == nil {
			return task.ErrSessionExpired
		}
	}
	return s.admin(req, sess)
}

// AdminSetData writes data to the node at path whatever its version
// (ErrNoNode if there is none): its version moves.
func (s *Server) AdminSetData(path string, data []byte) error {
	return s.admin(&task.SetDataRequest{Path: path, Data: data, Version: task.AnyVersion}, nil)
}

// AdminSetACL replaces the ACL of the node at path whatever its ACL
// version (ErrNoNode if there is none): its Aversion moves, and no watch
// fires, as for a zkCli setAcl. An ACL that lets a session not READ the
// node withholds from it the notifications of the node's changes from
// then on, as ZooKeeper does. One difference: the operator presents no
// id, so an ACL of scheme "auth" (the caller's own ids) is refused with
// ErrInvalidACL, where a real super user's setAcl stores its ids.
func (s *Server) AdminSetACL(path string, acl []task.ACL) error {
	return s.admin(&task.SetACLRequest{Path: path, ACL: acl, Version: task.AnyVersion}, nil)
}

func (s *Server) admin(req task.Request, sess *session) error {
	if err := reqcheck.Validate(req, s.cfg.MaxDataSize); err != nil {
		return err
	}
	var err error
	s.locked(func() {
		if s.down {
			err = task.ErrNotSent
			return
		}
		if sess != nil && !sess.alive {
			err = task.ErrSessionExpired
			return
		}
		s.zxid++
		tx := &txn{zxid: s.zxid, now: s.nowMillis()}
		if sess != nil {
			tx.session = sess.id // an ephemeral made for it (AdminCreate)
		}
		switch r := req.(type) {
		case *task.DeleteRequest:
			err = s.delete(tx, superUser, r)
		case *task.CreateRequest:
			_, _, err = s.create(tx, sess, superUser, r)
		case *task.SetDataRequest:
			_, err = s.setData(tx, superUser, r)
		case *task.SetACLRequest:
			_, err = s.setACL(tx, superUser, r)
		}
		if s.trace.on {
			s.tracef("admin %s zxid=%d: %s", describe(req), s.zxid, errString(err))
		}
		if err == nil {
			s.commit(tx)
		} else {
			s.journal(tx.zxid, tx.session)
		}
	})
	return err
}

// OrphanSession opens a session that no connection holds (an operator's
// zkCli that went away): it expires after timeout (negotiated as a
// client's), taking the ephemerals AdminCreate gave it. It returns the
// session's id.
func (s *Server) OrphanSession(timeout time.Duration) int64 {
	var id int64
	s.locked(func() {
		s.zxid++
		sess := &session{
			id:         s.sessIDs.take(),
			timeout:    s.NegotiateTimeout(timeout),
			alive:      true,
			ephemerals: map[string]struct{}{},
		}
		s.sessions[sess.id] = sess
		s.journal(s.zxid, sess.id)
		id = sess.id
		if s.trace.on {
			s.tracef("session open (orphan) id=%#x timeout=%s zxid=%d", sess.id, sess.timeout, s.zxid)
		}
		if s.down {
			return // armed when the server is up (startServer)
		}
		s.armExpiry(sess)
	})
	return id
}

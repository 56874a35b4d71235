package fakezk

import (
	"bytes"
	"fmt"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// bugMultiLiveCversion: a multi's creates are named from the stored
// cversion, which stays at int32's maximum once the counter has run out,
// instead of from the multi's own change records, whose cversion wraps: a
// multi with two sequential creates past the maximum fails (NodeExists)
// where 3.8.0 names the second with a negative number.
const bugMultiLiveCversion canary.Name = "fakezk/multi-live-cversion"

// txn collects one transaction's watch triggers and, for multi, how to undo
// its changes. Triggers fire only when the transaction commits.
type txn struct {
	zxid    int64
	session int64 // the session whose request or end it is; 0: the server's or an operator's (Commit.Session)
	now     int64 // ms since the epoch
	multi   bool  // record undo steps (only a multi can fail after a change)
	fires   []fired
	undo    []undoStep
	// touched are nodes changed with no trigger (setACL), for the
	// journal.
	touched []*node
	// prepCv, in a multi, is each parent's cversion as 3.8.0's
	// PrepRequestProcessor keeps it in the multi's change records: raised
	// by every create of the multi, wrapping at int32's maximum, while the
	// stored cversion is raised only if larger (DataTree.createNode). The
	// multi's later creates are named from it. A few entries (one per
	// parent a multi creates under), looked up in order: a slice, not a
	// map, so that a multi allocates none (the buffer is the server's,
	// takeBufs).
	prepCv []prepCv
	// priors are the nodes' versions before the transaction, kept while
	// a Conn lags (lag.go).
	priors []txPrior
}

// prepCv is one parent's cversion in a multi (txn.prepCv).
type prepCv struct {
	n  *node
	cv int32
}

// prepCvOf returns the cversion the multi keeps for parent, if any.
func (tx *txn) prepCvOf(parent *node) (int32, bool) {
	for _, p := range tx.prepCv {
		if p.n == parent {
			return p.cv, true
		}
	}
	return 0, false
}

// setPrepCv sets the cversion the multi keeps for parent.
func (tx *txn) setPrepCv(parent *node, cv int32) {
	for i := range tx.prepCv {
		if tx.prepCv[i].n == parent {
			tx.prepCv[i].cv = cv
			return
		}
	}
	tx.prepCv = append(tx.prepCv, prepCv{n: parent, cv: cv})
}

// fired is one watch trigger with the ACL of the node it is about, as
// DataTree passes it to the watch manager: a session that may not READ
// that node is not told (see fireTable). n is that node (path is its
// path), so that the commit finds it without looking its path up again
// (journalTx, reapCommitted): a later change of the same transaction may
// have removed it (node.removed).
type fired struct {
	path string
	typ  task.EventType
	acl  []task.ACL
	n    *node
}

// fire records a trigger of typ about n.
func (tx *txn) fire(n *node, typ task.EventType) {
	if tx.fires == nil {
		tx.fires = make([]fired, 0, 2)
	}
	tx.fires = append(tx.fires, fired{n.path, typ, n.acl, n})
}

// takeFires hands a transaction the server's spare trigger buffer (empty,
// or nil if another transaction holds it), so that a write's triggers do
// not allocate. Lock held.
func (s *Server) takeFires() []fired {
	f := s.spareFires
	s.spareFires = nil
	return f[:0]
}

// giveFires takes back a buffer takeFires handed out, once its
// transaction has committed or rolled back. Lock held.
func (s *Server) giveFires(f []fired) {
	if cap(f) > cap(s.spareFires) {
		clear(f[:cap(f)])
		s.spareFires = f[:0]
	}
}

// undoKind says which change an undoStep undoes.
type undoKind uint8

const (
	undoCreate  undoKind = iota + 1 // create: n, name, sess, oldCv, oldPz
	undoDelete                      // removeNode: n, name, sess (the owner, or nil), special, oldPz
	undoSetData                     // setData: n, oldStat, oldData
	undoSetACL                      // setACL: n, oldACL, oldAv
)

// undoStep records how to undo one change of a multi (only a multi
// records them): a value in the transaction's buffer (takeBufs), not a
// closure, so that a multi's changes allocate nothing to be undone.
type undoStep struct {
	kind    undoKind
	special bool // undoDelete: n was reapable
	oldCv   int32
	oldAv   int32
	oldPz   int64
	n       *node
	name    string
	sess    *session
	oldStat task.Stat
	oldData []byte
	oldACL  []task.ACL
}

// undo undoes the change u records.
func (s *Server) undo(u *undoStep) {
	n := u.n
	switch u.kind {
	case undoCreate:
		parent := n.parent
		parent.unlink(u.name)
		parent.stat.NumChildren--
		parent.stat.Cversion, parent.stat.Pzxid = u.oldCv, u.oldPz
		s.tree.remove(n)
		delete(s.tree.special, n)
		delete(u.sess.ephemerals, n.path)
	case undoDelete:
		parent := n.parent
		parent.link(u.name, n)
		parent.stat.NumChildren++
		parent.stat.Pzxid = u.oldPz
		s.tree.put(n)
		if u.special {
			s.tree.special[n] = struct{}{}
		}
		if u.sess != nil {
			u.sess.ephemerals[n.path] = struct{}{}
		}
	case undoSetData:
		n.stat, n.data = u.oldStat, u.oldData
	case undoSetACL:
		n.acl, n.stat.Aversion = u.oldACL, u.oldAv
	}
}

// rollback undoes the transaction's changes, newest first, and drops its
// triggers and prior versions (their buffers go back, emptied, with
// giveFires and giveBufs).
func (s *Server) rollback(tx *txn) {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		s.undo(&tx.undo[i])
	}
	tx.undo, tx.fires, tx.priors = tx.undo[:0], tx.fires[:0], tx.priors[:0]
}

// txBufs are the buffers of a transaction's undo steps, prior versions
// and multi cversions, which the server lends each write it applies
// (takeBufs) and takes back (giveBufs), so that a write does not
// allocate them.
type txBufs struct {
	undo   []undoStep
	priors []txPrior
	prepCv []prepCv
}

// takeBufs hands tx the server's spare buffers (empty; nil while another
// transaction holds them). Lock held.
func (s *Server) takeBufs(tx *txn) {
	b := &s.spareBufs
	tx.undo, tx.priors, tx.prepCv = b.undo[:0], b.priors[:0], b.prepCv[:0]
	*b = txBufs{}
}

// giveBufs takes back the buffers of tx, once it has committed or rolled
// back, cleared so that they hold nothing of it. Lock held.
func (s *Server) giveBufs(tx *txn) {
	b := &s.spareBufs
	if cap(tx.undo) > cap(b.undo) {
		clear(tx.undo[:cap(tx.undo)])
		b.undo = tx.undo[:0]
	}
	if cap(tx.priors) > cap(b.priors) {
		clear(tx.priors[:cap(tx.priors)])
		b.priors = tx.priors[:0]
	}
	if cap(tx.prepCv) > cap(b.prepCv) {
		clear(tx.prepCv[:cap(tx.prepCv)])
		b.prepCv = tx.prepCv[:0]
	}
}

// commit journals the transaction, fires its watches, then brings the container
// manager (reap.go) up to date with what it changed.
func (s *Server) commit(tx *txn) {
	s.journalTx(tx)
	s.keepPriors(tx)
	for _, f := range tx.fires {
		s.trigger(f.path, f.typ, f.acl)
	}
	s.reapCommitted(tx)
}

func parentOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			if i == 0 {
				return "/"
			}
			return path[:i]
		}
	}
	return "/"
}

// seqName appends the sequence suffix to path: cv as %010d formats it
// (zero-padded to ten characters, the sign first), without fmt.
func seqName(path string, cv int32) string {
	if cv < 0 {
		return path + fmt.Sprintf("%010d", cv)
	}
	var buf [10]byte
	for i := len(buf) - 1; i >= 0; i-- {
		buf[i] = byte('0' + cv%10)
		cv /= 10
	}
	return path + string(buf[:])
}

func versionOK(have, want int32) bool { return want == task.AnyVersion || have == want }

// create follows PrepRequestProcessor.pRequest2TxnCreate: TTL support,
// ACL validity (fixupACL, which also expands "auth"), parent exists,
// CREATE on the parent, the sequence suffix from the parent's cversion,
// node exists, ephemeral parent; then DataTree.createNode, which moves the
// parent's cversion and pzxid only if the new cversion is larger (so at
// int32's maximum they stay put).
func (s *Server) create(tx *txn, sess *session, who *principal, r *task.CreateRequest) (string, task.Stat, error) {
	if r.Mode.IsTTL() && !s.cfg.ExtendedTypes {
		return "", task.Stat{}, task.ErrUnimplemented
	}
	acl, err := fixupACL(r.ACL, who)
	if err != nil {
		return "", task.Stat{}, err
	}
	path := r.Path
	parent := s.tree.nodes[parentOf(path)]
	if parent == nil {
		return "", task.Stat{}, task.ErrNoNode
	}
	if err := checkACL(parent.acl, task.PermCreate, who); err != nil {
		return "", task.Stat{}, err
	}
	stored := parent.stat.Cversion
	cv := stored
	if p, ok := tx.prepCvOf(parent); ok {
		cv = p
	}
	if r.Mode.IsSequential() {
		path = seqName(path, cv)
	}
	name := path[len(parent.path):]
	if parent.path != "/" {
		name = name[1:]
	} else {
		name = path[1:]
	}
	// The node would be the parent's child of that name: looked up
	// among the parent's children (often none) rather than in the
	// whole tree's index, but for "/" (no name), the root itself.
	if exists := parent.children[name] != nil; exists || name == "" && s.tree.nodes[path] != nil {
		return "", task.Stat{}, task.ErrNodeExists
	}
	if parent.isEphemeral() {
		return "", task.Stat{}, task.ErrNoChildrenForEphemerals
	}
	var owner int64
	var ttl int64
	switch {
	case r.Mode.IsEphemeral():
		owner = sess.id
	case r.Mode == task.Container:
		owner = containerOwner
	case r.Mode.IsTTL():
		ttl = r.TTL.Milliseconds()
		owner = ttlOwnerMask | ttl
	}
	n := s.newNode()
	*n = node{
		path:   path,
		data:   bytes.Clone(r.Data), // empty is not null
		acl:    acl,
		parent: parent,
		ttl:    ttl,
		stat: task.Stat{
			Czxid: tx.zxid, Mzxid: tx.zxid, Pzxid: tx.zxid,
			Ctime: tx.now, Mtime: tx.now,
			EphemeralOwner: owner, DataLength: int32(len(r.Data)),
		},
	}
	s.prior(tx, parent.path, parent)
	s.prior(tx, path, nil)
	oldCv, oldPz := parent.stat.Cversion, parent.stat.Pzxid
	newCv := cv + 1 // wraps as Java's int does
	if tx.multi && !canary.On(bugMultiLiveCversion) {
		tx.setPrepCv(parent, newCv)
	}
	if newCv > stored {
		parent.stat.Cversion = newCv
		parent.stat.Pzxid = tx.zxid
	}
	parent.link(name, n)
	s.kid(tx, parent.path, name, true)
	parent.stat.NumChildren++
	s.tree.put(n)
	if r.Mode.IsEphemeral() {
		sess.ephemerals[path] = struct{}{}
	}
	if n.reapable() {
		s.tree.special[n] = struct{}{}
	}
	if tx.multi {
		tx.undo = append(tx.undo, undoStep{kind: undoCreate, n: n, name: name, sess: sess, oldCv: oldCv, oldPz: oldPz})
	}
	tx.fire(n, task.EventNodeCreated)
	tx.fire(parent, task.EventNodeChildrenChanged)
	return path, n.clientStat(), nil
}

// delete follows pRequest2TxnDelete: special paths are bad arguments, then
// the parent must exist, DELETE on the parent (checked before the node
// is looked up: a session without it learns NoAuth, not whether the node
// exists), the node must exist, the version, and only then children (a
// bad version on a node with children is BADVERSION). Deleting does not
// change the parent's cversion, only its pzxid.
func (s *Server) delete(tx *txn, who *principal, r *task.DeleteRequest) error {
	if isSpecial(r.Path) {
		return task.ErrBadArguments
	}
	// The node is looked up first only to find its parent without a
	// second lookup: the checks keep their order.
	n := s.tree.nodes[r.Path]
	var parent *node
	if n != nil {
		parent = n.parent
	} else {
		parent = s.tree.nodes[parentOf(r.Path)]
	}
	if parent == nil {
		return task.ErrNoNode
	}
	if err := checkACL(parent.acl, task.PermDelete, who); err != nil {
		return err
	}
	if n == nil {
		return task.ErrNoNode
	}
	if !versionOK(n.stat.Version, r.Version) {
		return task.ErrBadVersion
	}
	if len(n.children) > 0 {
		return task.ErrNotEmpty
	}
	s.removeNode(tx, n)
	return nil
}

// removeNode is DataTree.deleteNode: it unlinks n and fires its triggers.
func (s *Server) removeNode(tx *txn, n *node) {
	parent := n.parent
	name := task.Base(n.path)
	s.prior(tx, n.path, n)
	s.prior(tx, parent.path, parent)
	oldPz := parent.stat.Pzxid
	parent.unlink(name)
	s.kid(tx, parent.path, name, false)
	parent.stat.NumChildren--
	if tx.zxid > parent.stat.Pzxid {
		parent.stat.Pzxid = tx.zxid
	}
	s.tree.remove(n)
	_, special := s.tree.special[n]
	if special {
		delete(s.tree.special, n)
		s.reap.stale = true
	}
	var owner *session
	if n.isEphemeral() {
		if o := s.sessions[n.stat.EphemeralOwner]; o != nil {
			owner = o
			delete(o.ephemerals, n.path)
		}
	}
	if tx.multi {
		tx.undo = append(tx.undo, undoStep{kind: undoDelete, n: n, name: name, sess: owner, special: special, oldPz: oldPz})
	}
	tx.fire(n, task.EventNodeDeleted)
	tx.fire(parent, task.EventNodeChildrenChanged)
}

// setData follows pRequest2TxnSetData: node exists, WRITE, version. The
// version wraps past int32's maximum as Java's int does.
func (s *Server) setData(tx *txn, who *principal, r *task.SetDataRequest) (task.Stat, error) {
	n := s.tree.nodes[r.Path]
	if n == nil {
		return task.Stat{}, task.ErrNoNode
	}
	if err := checkACL(n.acl, task.PermWrite, who); err != nil {
		return task.Stat{}, err
	}
	if !versionOK(n.stat.Version, r.Version) {
		return task.Stat{}, task.ErrBadVersion
	}
	s.prior(tx, n.path, n)
	old, oldData := n.stat, n.data
	n.data = bytes.Clone(r.Data)
	n.stat.Version++
	n.stat.Mzxid = tx.zxid
	n.stat.Mtime = tx.now
	n.stat.DataLength = int32(len(r.Data))
	if tx.multi {
		tx.undo = append(tx.undo, undoStep{kind: undoSetData, n: n, oldStat: old, oldData: oldData})
	}
	tx.fire(n, task.EventNodeDataChanged)
	return n.clientStat(), nil
}

// setACL follows the setACL case of pRequest2Txn: the new ACL's validity
// (fixupACL) before the node's existence, ADMIN on the node, then the ACL
// version (aversion, which it raises, wrapping as a Java int). It fires
// no watch and changes no other Stat field.
func (s *Server) setACL(tx *txn, who *principal, r *task.SetACLRequest) (task.Stat, error) {
	acl, err := fixupACL(r.ACL, who)
	if err != nil {
		return task.Stat{}, err
	}
	n := s.tree.nodes[r.Path]
	if n == nil {
		return task.Stat{}, task.ErrNoNode
	}
	if err := checkACL(n.acl, task.PermAdmin, who); err != nil {
		return task.Stat{}, err
	}
	if !versionOK(n.stat.Aversion, r.Version) {
		return task.Stat{}, task.ErrBadVersion
	}
	s.priorACL(tx, n.path, n)
	oldACL, oldAv := n.acl, n.stat.Aversion
	n.acl = acl
	n.stat.Aversion++
	if s.cfg.Journal != nil {
		tx.touched = append(tx.touched, n)
	}
	if tx.multi {
		tx.undo = append(tx.undo, undoStep{kind: undoSetACL, n: n, oldACL: oldACL, oldAv: oldAv})
	}
	return n.clientStat(), nil
}

// check is the multi's version check: node exists, READ, version.
func (s *Server) check(who *principal, r *task.CheckRequest) error {
	n := s.tree.nodes[r.Path]
	if n == nil {
		return task.ErrNoNode
	}
	if err := checkACL(n.acl, task.PermRead, who); err != nil {
		return err
	}
	if !versionOK(n.stat.Version, r.Version) {
		return task.ErrBadVersion
	}
	return nil
}

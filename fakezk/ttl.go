package fakezk

import "time"

// TTL nodes (Config.ExtendedTypes). ZooKeeper's ContainerManager deletes a
// TTL node that has no children once more than its TTL has passed since
// its mtime, checking every znode.container.checkIntervalMs. The fake
// checks at the instant that becomes true (a timer per node, re-armed
// when the data changes) and when the node loses its last child; each
// removal is a transaction of its own.

// armTTL schedules n's TTL check. Lock held.
func (s *Server) armTTL(n *node) {
	if n.ttl <= 0 {
		return
	}
	czxid, mtime := n.stat.Czxid, n.stat.Mtime
	due := time.UnixMilli(mtime + n.ttl + 1)
	s.afterFunc(due.Sub(s.clock.Now()), func() {
		cur := s.tree.nodes[n.path]
		if cur != n || n.stat.Czxid != czxid {
			return // gone, or another node by now
		}
		if n.stat.Mtime != mtime {
			s.armTTL(n) // modified since: count from the new mtime
			return
		}
		s.reapTTL(n)
	})
}

// reapTTL deletes n if it is an expired, childless TTL node. Lock held.
func (s *Server) reapTTL(n *node) {
	if n.ttl <= 0 || len(n.children) > 0 || s.nowMillis()-n.stat.Mtime <= n.ttl {
		return
	}
	s.zxid++
	tx := &txn{zxid: s.zxid, now: s.nowMillis()}
	s.tracef("ttl expired %s zxid=%d", n.path, s.zxid)
	s.removeNode(tx, n)
	s.commit(tx)
}

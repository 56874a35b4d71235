package fakezk

import (
	"fmt"
	"maps"
	"slices"

	"github.com/zkflow/zkflow/task"
)

// CheckInvariants verifies the server's own consistency: every ephemeral
// has a live owner that lists it, no node has a child under an ephemeral,
// and every Stat agrees with the node (numChildren, dataLength, zxids not
// ahead of the server), and the container manager has a run ahead
// whenever a container or TTL node is or will be due for deletion. It
// returns the first violation found.
func (s *Server) CheckInvariants() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	count, special := 0, 0
	s.tree.walk(func(n *node) {
		count++
		if n.reapable() {
			special++
		}
		if err != nil {
			return
		}
		st := n.stat
		switch {
		case int(st.NumChildren) != len(n.children):
			err = fmt.Errorf("%s: numChildren %d, has %d", n.path, st.NumChildren, len(n.children))
		case int(st.DataLength) != len(n.data):
			err = fmt.Errorf("%s: dataLength %d, has %d", n.path, st.DataLength, len(n.data))
		case st.Czxid > s.zxid || st.Mzxid > s.zxid || st.Pzxid > s.zxid:
			err = fmt.Errorf("%s: zxid ahead of server (%d)", n.path, s.zxid)
		case st.Mzxid < st.Czxid || st.Pzxid < st.Czxid:
			err = fmt.Errorf("%s: mzxid/pzxid before czxid", n.path)
		case n.names != nil && !slices.Equal(n.names, slices.Sorted(maps.Keys(n.children))):
			err = fmt.Errorf("%s: ordered children %v, has %d", n.path, n.names, len(n.children))
		case n.isEphemeral() && len(n.children) > 0:
			err = fmt.Errorf("%s: ephemeral with children", n.path)
		case n.isEphemeral():
			o := s.sessions[st.EphemeralOwner]
			if o == nil || !o.alive {
				err = fmt.Errorf("%s: ephemeral owner %#x is not a live session", n.path, st.EphemeralOwner)
			} else if _, ok := o.ephemerals[n.path]; !ok {
				err = fmt.Errorf("%s: owner does not list it", n.path)
			}
		}
		if n.parent != nil && s.tree.nodes[n.path] != n {
			err = fmt.Errorf("%s: not indexed", n.path)
		}
		if _, ok := s.tree.special[n]; ok != n.reapable() && err == nil {
			err = fmt.Errorf("%s: container manager's set has it %v, reapable %v", n.path, ok, n.reapable())
		}
	})
	if err == nil && count != len(s.tree.nodes) {
		err = fmt.Errorf("index has %d nodes, tree %d", len(s.tree.nodes), count)
	}
	if err == nil && s.tree.sorted != nil {
		err = s.tree.checkSorted()
	}
	if err == nil && special != len(s.tree.special) {
		err = fmt.Errorf("container manager's set has %d nodes, tree %d", len(s.tree.special), special)
	}
	if err == nil {
		err = s.checkReaper()
	}
	if err == nil {
		for _, id := range s.sessionIDs() {
			for p := range s.sessions[id].ephemerals {
				if n := s.tree.nodes[p]; n == nil || n.stat.EphemeralOwner != id {
					return fmt.Errorf("session %#x lists %s, which it does not own", id, p)
				}
			}
			if err := s.checkWithheld(s.sessions[id]); err != nil {
				return err
			}
		}
	}
	return err
}

// NodeStat returns path's Stat as a client would see it, straight from
// the tree, without a request or a zxid (for tests and invariant checks).
func (s *Server) NodeStat(path string) (task.Stat, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.tree.nodes[path]
	if n == nil {
		return task.Stat{}, false
	}
	return n.clientStat(), true
}

// NodeACL returns a copy of path's ACL, straight from the tree, without a
// request or a zxid (for tests and invariant checks).
func (s *Server) NodeACL(path string) ([]task.ACL, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.tree.nodes[path]
	if n == nil {
		return nil, false
	}
	return slices.Clone(n.acl), true
}

// NodeData returns a copy of path's data and its Stat, straight from the
// tree, without a request or a zxid (for tests and invariant checks: an
// end-of-run check that read through a client would depend on that
// client's session, which a fault may be ending).
func (s *Server) NodeData(path string) ([]byte, task.Stat, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.tree.nodes[path]
	if n == nil {
		return nil, task.Stat{}, false
	}
	return slices.Clone(n.data), n.clientStat(), true
}

// Paths returns every node's path, sorted.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tree.paths())
}

// Children returns the names of path's children, sorted, straight from
// the tree, without a request or a zxid (for tests and invariant checks),
// and false if path has no node.
func (s *Server) Children(path string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.tree.nodes[path]
	if n == nil {
		return nil, false
	}
	return s.copyNames(n.childNames()), true
}

// checkWithheld verifies that sess counts its withheld watches right and
// that none of them is in a watch table (the server forgot them).
func (s *Server) checkWithheld(sess *session) error {
	n := 0
	for _, w := range sess.watches {
		if !w.withheld {
			continue
		}
		if w.done {
			return fmt.Errorf("session %#x: watch on %s both withheld and fired", sess.id, w.path)
		}
		n++
		table := s.dataW
		if w.kind == kindChild {
			table = s.childW
		}
		if slices.Contains(table[w.path], w) {
			return fmt.Errorf("session %#x: withheld watch on %s still registered", sess.id, w.path)
		}
	}
	if n != sess.withheld {
		return fmt.Errorf("session %#x: %d withheld watches, counted %d", sess.id, n, sess.withheld)
	}
	return nil
}

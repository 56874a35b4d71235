package fakezk

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// Remote connections: the server's side of a client that reaches the
// Server over a network transport (fakezk/wire) instead of through a Conn
// it holds in its hand.
//
// A remote Conn differs from an in-process one in three ways, each as a
// real server behaves towards a TCP client:
//   - it never reconnects by itself: the transport attaches it (Accept for
//     a new session, Resume for an old one) and detaches it when its
//     connection closes (Detach), and a fault that cuts it off (Drop,
//     Partition, Expire, Restart, LoseQuorum, Wipe) calls the Link.OnCut
//     hook of the link it cut, which must close that link, at once even
//     while Delay holds the session's deliveries;
//   - its one-time and persistent watches leave the server with the link
//     that set them, as a ServerCnxn's do (WatchManager.removeWatcher):
//     the client sets them again with SetWatches, checked against the zxid
//     it last saw (DataTree.setWatches);
//   - its identities grow at runtime with AddAuth (an auth packet), and a
//     client closing its session frees it from the server's list.

// Link is one transport connection of a remote session: what Accept and
// Resume return. A session has at most one current link; Resume makes a
// new one current and cuts the old.
type Link struct {
	c  *Conn
	id uint64
}

// Conn returns the session's Conn, on which the link's other requests
// are answered (auth, watches set again, close).
func (l *Link) Conn() *Conn { return l.c }

// Send sends req on the session (Conn.Send) if l is still its current
// link. A request read from a link that Resume has replaced is dropped,
// never applied and never answered: a real server stops reading a
// connection it closes for the session's new one, so nothing the client
// wrote there can be applied after what it sends on the new one.
func (l *Link) Send(req task.Request, done func(resp task.Response, zxid int64), watch func(task.Event)) {
	l.c.do(l.id, req, nil, done, watch)
}

// Current reports whether l is still its session's current link (Resume
// has not replaced it).
func (l *Link) Current() bool {
	s := l.c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.c.link == l.id
}

// OnCut sets f, the transport's hook that closes l's connection, to be
// called once when the server cuts l: a fault (Drop, Partition, Expire,
// Restart, LoseQuorum, Wipe, Crash), a Resume that replaces l, or l's
// own Detach. f is called outside the session's delivery queue, so that
// the connection closes at once even while Delay holds the session's
// deliveries, as a network drop or an expiry closes a connection whatever
// replies are on their way; what the session queued meanwhile stays
// queued, in order (the events callback gets StateSuspended in its
// place). f runs once the deliveries ready before the cut are made, on
// the goroutine that makes them (in automatic mode the fault's, or
// Async's delivery goroutine), never concurrently with the session's
// callbacks and never with the server's lock held; it must not block. If
// l is cut already, OnCut calls f itself, on its caller's goroutine.
func (l *Link) OnCut(f func()) {
	c := l.c
	s := c.srv
	s.mu.Lock()
	live := c.link == l.id && c.linked
	if live {
		c.cut = f
	}
	s.mu.Unlock()
	if !live {
		f()
	}
}

// cutLink hands the hook of c's current link, if any, to drain. Lock
// held.
func (s *Server) cutLink(c *Conn) {
	if c.cut != nil {
		s.cuts = append(s.cuts, c.cut)
		c.cut = nil
	}
}

// ErrRefused is what Accept and Resume report when the server takes no
// connection now: it is down (Restart), not serving (LoseQuorum) or the
// client is partitioned from it. The transport closes the connection
// without a connect response.
var ErrRefused = errors.New("fakezk: connection refused")

// Accept opens a new session for a remote client, as a real server does for
// a connect request with session id 0. events (may be nil) receives the
// session's state changes in its order; the transport closes the link
// on Link.OnCut, not on StateSuspended, which Delay may hold.
// cfg.Timeout is negotiated (NegotiateTimeout). It fails with ErrRefused
// when the server is down or not serving, and with an error wrapping
// task.CodeAuthFailed for credentials of an unknown scheme in cfg.Auth.
func (s *Server) Accept(cfg ConnConfig, events func(task.Event)) (*Link, error) {
	if s.cfg.Deterministic {
		return nil, errors.New("fakezk: Accept needs an automatic-mode server")
	}
	c := s.Connect(cfg)
	s.mu.Lock()
	c.remote, c.linked = true, true
	c.link++
	l := &Link{c: c, id: c.link}
	s.mu.Unlock()
	if err := c.Start(events); err != nil {
		s.locked(func() { s.forget(c) })
		return nil, err
	}
	var err error
	s.locked(func() {
		if c.sess == nil || !c.connected {
			c.closed = true
			s.forget(c)
			err = ErrRefused
		}
		c.heardAt = s.clock.Now()
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Resume attaches a remote client to its live session id, as a real server
// resumes a session whose id and password check out. A link the session
// still had is cut first (its Link.OnCut hook, StateSuspended to its
// events). events replaces the session's events callback. It fails with task.ErrSessionExpired
// when no live session has that id (the transport answers session id 0)
// and with ErrRefused when the server takes no connection now. A session
// held by an in-process Conn cannot be resumed remotely: it is reported
// expired. timeout, if above 0, is negotiated (NegotiateTimeout) and
// becomes the session's timeout from now on, as a real server takes the
// one a resuming client's connect request asks for; 0 keeps the
// session's.
func (s *Server) Resume(id int64, timeout time.Duration, events func(task.Event)) (*Link, error) {
	var c *Conn
	var l *Link
	var err error
	s.locked(func() {
		sess := s.sessions[id]
		switch {
		case s.down:
			err = ErrRefused
			return
		case sess == nil || !sess.alive || sess.conn == nil || !sess.conn.remote:
			err = task.ErrSessionExpired
			return
		}
		c = sess.conn
		if c.netDown {
			err = ErrRefused
			return
		}
		c.heardAt = s.clock.Now() // the connect request
		if timeout > 0 {
			sess.timeout = s.NegotiateTimeout(timeout)
		}
		if c.connected {
			s.tracef("c%d link replaced", c.num)
			s.disconnect(c, false)
		}
		c.events = events
		c.linked = true
		c.link++
		l = &Link{c: c, id: c.link}
		s.reconnect(c)
		if !c.connected {
			c.linked = false
			err = ErrRefused
		}
		c.heardAt = s.clock.Now()
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// CloseLinkOf closes the current link of the remote session id, if it
// has one, as a 3.8.0 server closes a session's connection when a connect
// request names the session, before it checks the password
// (ZooKeeperServer.processConnectRequest: closeSession(sessionId,
// CLIENT_RECONNECT), then reopenSession): a connect with a wrong password
// is refused, and the session's client loses its connection all the same.
// The session lives on; its client may Resume it.
func (s *Server) CloseLinkOf(id int64) {
	s.locked(func() {
		sess := s.sessions[id]
		if sess == nil || !sess.alive || sess.conn == nil || !sess.conn.remote {
			return
		}
		if c := sess.conn; c.connected {
			s.tracef("c%d link closed: a connect request named its session", c.num)
			s.disconnect(c, false)
		}
	})
}

// Heard tells the server that a packet came from l's client (a request,
// a ping): the session's timeout counts from the last one, so that when
// the link ends (Detach, a fault's cut) the session expires a timeout
// after the client was last heard from, as on a real server, not a
// timeout after the link's end.
func (l *Link) Heard() {
	c := l.c
	s := c.srv
	s.mu.Lock()
	if c.link == l.id {
		c.heardAt = s.clock.Now()
	}
	s.mu.Unlock()
}

// Detach tells the server that the link closed: if it is still its
// session's current link, requests in flight are not applied, the
// session's watches leave the server and its expiry countdown runs from
// the last packet heard (Heard). The client may Resume within what is
// left of its timeout. A link replaced by Resume, or
// cut by a fault, is detached already and Detach does nothing.
func (l *Link) Detach() {
	c := l.c
	s := c.srv
	s.locked(func() {
		if c.link == l.id && c.connected {
			s.tracef("c%d link closed", c.num)
			s.disconnect(c, false)
		}
	})
}

// remoteCheck is what a 3.8.0 server checks of a remote client's request
// before it applies it, in its order; no client-side check (reqcheck) has
// run. Writes are checked as PrepRequestProcessor checks them: a create's
// mode, then TTL support (Unimplemented), then its TTL, data and path
// (validateCreateRequest, validatePath); a delete's path only as
// getParentPathAndValidate does; setData's, setACL's or check's path; a multi's ops one by one as the multi applies them
// (multi, apply.go). Reads, sync and the watch requests are not checked
// at all: the server looks their path up as it is, so a path no client
// would send reads NoNode (or, for "", the root: lookup), and sync echoes
// it. Lock held.
func (s *Server) remoteCheck(req task.Request) error {
	switch r := req.(type) {
	case *task.CreateRequest:
		if r.Mode.IsTTL() && !s.cfg.ExtendedTypes {
			return task.ErrUnimplemented
		}
	case *task.DeleteRequest:
		// Only getParentPathAndValidate: a path with no "/", with a NUL,
		// or a special one; any other ("/w/", "/w//x", "/w/.") is looked
		// up as it is and is not there (NoNode).
		if !strings.Contains(r.Path, "/") || strings.ContainsRune(r.Path, 0) || isSpecial(r.Path) {
			return task.ErrBadArguments
		}
		return nil
	case *task.SetDataRequest, *task.SetACLRequest, *task.CheckRequest:
	default: // a multi, the reads, sync, the watch requests
		return nil
	}
	return reqcheck.Validate(req, s.cfg.MaxDataSize)
}

// dropLinkWatches takes a remote session's watches off the server when its
// link goes, without telling anyone: the client holds them and sets them
// again on its next link. Lock held.
func (s *Server) dropLinkWatches(c *Conn) {
	c.linked = false
	sess := c.sess
	if sess == nil {
		return
	}
	for _, w := range sess.watches {
		if !w.done && !w.withheld {
			s.unregister(w)
		}
		w.done = true
	}
	sess.watches, sess.withheld = nil, 0
	s.unregisterPersistent(sess)
	for _, pw := range sess.pwatches {
		if !pw.done {
			pw.done = true
			s.pwatchN--
		}
	}
	sess.pwatches = nil
}

// forget takes a remote Conn whose session is over off the server's list.
// Lock held.
func (s *Server) forget(c *Conn) {
	if i := slices.Index(s.conns, c); i >= 0 {
		s.conns = slices.Delete(s.conns, i, i+1)
	}
}

// AddAuth adds the identity of an auth packet to c's session (a remote
// Conn), as ZooKeeperServer.processPacket does: scheme "digest" with
// "user:password" (or any string: its digest is taken as is) adds
// digest:user:hash, "ip" adds nothing new. Any other scheme fails with
// task.CodeAuthFailed; the transport then closes the connection.
func (c *Conn) AddAuth(scheme string, auth []byte) error {
	p, err := newPrincipal("", []task.AuthInfo{{Scheme: scheme, Auth: auth}})
	if err != nil {
		return err
	}
	s := c.srv
	s.locked(func() {
		for _, id := range p.ids[1:] {
			if !slices.Contains(c.who.ids, id) {
				c.who.ids = append(c.who.ids, id)
			}
		}
		grantSuper(c.who, s.cfg.SuperDigest)
	})
	return nil
}

// WhoAmI returns the identities of c's session as whoAmI answers them:
// scheme and id, the ip id first.
func (c *Conn) WhoAmI() []task.ACL {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]task.ACL, 0, len(c.who.ids))
	for _, id := range c.who.ids {
		out = append(out, task.ACL{Scheme: id.scheme, ID: id.id})
	}
	return out
}

// SetWatches sets a remote client's watches again on a new link, as
// DataTree.setWatches does for the zxid the client last saw: a data watch
// fires NodeDeleted or NodeDataChanged now if that happened since, an
// exist watch NodeCreated if the node exists, a child watch NodeDeleted or
// NodeChildrenChanged; the others, and every persistent watch, are set.
// Notifications go to cb, which also receives the later ones.
func (c *Conn) SetWatches(relZxid int64, data, exist, child, persistent, recursive []string, cb func(task.Event)) {
	s := c.srv
	s.locked(func() {
		sess := c.sess
		if sess == nil || !sess.alive || !c.connected {
			return
		}
		lists := [...]struct {
			paths []string
			kind  watchKind
		}{{data, kindData}, {exist, kindExist}, {child, kindChild}}
		for _, l := range lists {
			for _, p := range l.paths {
				if typ := changedSince(s.tree.lookup(p), l.kind, relZxid); typ != 0 {
					s.trig++ // one notification each, as DataTree.setWatches sends them
					s.enqueue(c, item{kind: itemWatch, fn: cb, ev: task.Event{Type: typ, State: task.StateConnected, Path: p}})
					continue
				}
				s.addWatch(sess, p, l.kind, cb)
			}
		}
		for _, p := range persistent {
			s.addPersistent(sess, p, task.WatchPersistent, cb)
		}
		for _, p := range recursive {
			s.addPersistent(sess, p, task.WatchPersistentRecursive, cb)
		}
		compactWatches(sess)
	})
}

// CheckWatches reports whether the server holds a watch of typ on path
// (checkWatches), task.CodeNoWatcher if not. A 3.8 server answers for
// any session's watch there, not only the asking session's
// (WatchManager.containsWatcher looks at the path's watchers).
func (c *Conn) CheckWatches(path string, typ task.WatcherType) error {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.sess == nil {
		return task.CodeNoWatcher
	}
	has := func(table map[string][]*watch) bool {
		for _, w := range table[path] {
			if !w.done {
				return true
			}
		}
		return false
	}
	hasP := func(table map[string][]preg) bool {
		return len(table[path]) > 0
	}
	data := has(s.dataW) || hasP(s.pdata)
	kids := has(s.childW) || hasP(s.pchild)
	switch {
	case typ == task.WatcherData && data, typ == task.WatcherChildren && kids, typ == task.WatcherAny && (data || kids):
		return nil
	}
	return task.CodeNoWatcher
}

// Ephemerals returns the paths of the ephemerals c's session owns that
// start with prefix, sorted (getEphemerals; "", "/" or blanks mean all).
func (c *Conn) Ephemerals(prefix string) []string {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if c.sess != nil {
		for p := range c.sess.ephemerals {
			if t := strings.TrimSpace(prefix); t == "" || t == "/" || strings.HasPrefix(p, prefix) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// AllChildrenNumber returns the number of nodes below path, at every depth
// (getAllChildrenNumber), or task.ErrNoNode, or task.ErrNoAuth without
// READ on the node. For "", the root's alias (lookup), it is every node,
// the root included, as DataTree.getAllChildrenNumber counts the paths
// that start with path + "/".
func (c *Conn) AllChildrenNumber(path string) (int, error) {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	nd := s.tree.lookup(path)
	if nd == nil {
		return 0, task.ErrNoNode
	}
	if !allowed(nd.acl, task.PermRead, c.who) {
		return 0, task.ErrNoAuth
	}
	n := 0
	for p := range s.tree.nodes {
		if p != path && isAncestor(path, p) {
			n++
		}
	}
	return n, nil
}

// TickTime returns the server's tick (Config.TickTime, defaults applied).
func (s *Server) TickTime() time.Duration { return s.cfg.TickTime }

// SessionConn returns the Conn of the live session id, or nil: the handle
// the fault methods (Drop, Partition, Expire, Delay) take for a remote
// client's session. A client that has just dialled has no session yet
// (go-zookeeper's SessionID is 0 until its state is StateHasSession):
// wait for it first, since a fault given nil does nothing.
func (s *Server) SessionConn(id int64) *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[id]; sess != nil && sess.alive {
		return sess.conn
	}
	return nil
}

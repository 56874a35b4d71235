package zkadapter

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// ZooKeeper opcodes of a connection's prelude.
const (
	opSetAuth    = 100
	opSetWatches = 101
)

// setAuthRequest is ZooKeeper's AuthPacket.
type setAuthRequest struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// setWatchesRequest is ZooKeeper's SetWatches: the watches a session had
// on its last connection, which the server sets again (and fires at once
// for any change after RelativeZxid).
type setWatchesRequest struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// setWatchesLimit bounds one SetWatches request, as ZooKeeper's own client
// does (128 KiB: well under the default jute.maxbuffer); against a server
// configured with a smaller one (Config.MaxPacketSize) the prelude splits
// at that instead (watchesLimit).
const setWatchesLimit = 128 * 1024

// watchesLimit is the length on the wire no SetWatches or SetWatches2
// request of the prelude exceeds: setWatchesLimit, or the server's packet
// limit when it is smaller (a longer request would have the server close
// every connection, and the session never be usable again). Do refuses a
// watch whose path alone would not fit (rewatchSize).
func (c *Conn) watchesLimit() int {
	return min(setWatchesLimit, c.cfg.MaxPacketSize)
}

// sendPrelude queues the first requests of connection conn, before any
// request made on it: the configured credentials (ZooKeeper applies them
// to the session before anything that follows), a sync when the session
// was resumed with its zxid waived (the server may be behind what the
// session saw; every request after the sync is answered from at least the
// leader's state), then, when the session
// had watches, the SetWatches requests that set them again on this
// connection (go-zookeeper's own re-registration would send them from a
// goroutine of its own, racing requests made after the reconnect). The
// server handles a session's requests in order, so every request made on
// the connection is handled after them: a change that fired a watch
// while the client was away is notified before any reply that shows it.
// It reports false, queueing nothing, when conn is no longer the
// connection the session is usable on.
func (c *Conn) sendPrelude(zc *zk.Conn, conn uint64) bool {
	c.mu.Lock()
	if c.closing || conn != c.live || c.state != task.StateConnected {
		c.mu.Unlock()
		return false
	}
	auth := c.cfg.Auth
	reqs := setWatches(c.watches, c.lastZxid, c.watchesLimit())
	reqs2 := setWatches2(c.pwatches, c.lastZxid, c.watchesLimit())
	syncFirst := c.syncFirst
	c.syncFirst = false
	c.mu.Unlock()
	for i, a := range auth {
		zkQueueRequest(zc, opSetAuth, &guarded{c: c, conn: conn, body: &setAuthRequest{Scheme: a.Scheme, Auth: a.Auth}},
			&emptyResponse{}, c.authReply(a.Scheme, i == len(auth)-1))
	}
	// Only the last of the sync and the SetWatches counts its reply's
	// zxid (preludeReply): each reply carries the server's latest, past
	// changes whose notifications a later SetWatches of the prelude
	// brings; were it counted and the connection cut before that one,
	// the next prelude would set those watches from past the changes and
	// the server would never report them.
	left := len(reqs) + len(reqs2)
	if syncFirst {
		left++
	}
	last := func() bool { left--; return left == 0 }
	if syncFirst {
		root := c.cfg.Root
		if root == "" {
			root = "/"
		}
		zkQueueRequest(zc, opSync, &guarded{c: c, conn: conn, body: &pathRequest{root}}, &pathResponse{}, c.preludeReply("sync", last()))
	}
	for _, r := range reqs {
		zkQueueRequest(zc, opSetWatches, &guarded{c: c, conn: conn, body: r}, &emptyResponse{}, c.preludeReply("setWatches", last()))
	}
	for _, r := range reqs2 {
		zkQueueRequest(zc, opSetWatches2, &guarded{c: c, conn: conn, body: r}, &emptyResponse{}, c.preludeReply("setWatches2", last()))
	}
	return true
}

// preludeReply handles the reply to a prelude request: the last one's zxid
// counts (sendPrelude says why the others' do not), and a failure is
// logged at Error level and kept as the Conn's last error (a failed
// setAuth: the server closes the connection; a failed SetWatches: those
// watches would never fire).
func (c *Conn) preludeReply(what string, last bool) func(unsafe.Pointer, unsafe.Pointer, error) {
	return func(_, hdr unsafe.Pointer, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if last {
			c.sawZxid(hdr)
		}
		if err != nil && !c.closing {
			c.lastErr = err
			c.log.Error("zkadapter: "+what+" failed", "err", err, "server", c.serverLocked())
		}
	}
}

// authReply handles the reply to a setAuth request. The last credential's
// acceptance lets Connect return. A refusal (AuthFailed: a scheme the
// server has no provider for, or credentials its provider rejects) is
// final, as in ZooKeeper's own client: the server closes the connection and
// would refuse again on every reconnect, so the Conn closes itself, and
// Connect (Dial) fails with an error wrapping ErrNoSession and
// task.CodeAuthFailed.
func (c *Conn) authReply(scheme string, last bool) func(unsafe.Pointer, unsafe.Pointer, error) {
	return func(_, hdr unsafe.Pointer, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.sawZxid(hdr)
		if c.closing {
			return
		}
		if err == nil {
			if last {
				c.firstDone()
			}
			return
		}
		c.authErr = fmt.Errorf("the server refused the credentials of scheme %q: %w", scheme, mapErr(err))
		c.lastErr = c.authErr
		c.log.Error("zkadapter: "+c.authErr.Error()+"; closing", "server", c.serverLocked())
		go c.Close() // not on go-zookeeper's receive goroutine, which Close waits for
	}
}

// setWatches returns the SetWatches requests for the registry ws, split so
// that none is longer than limit on the wire (a path too long to fit with
// the header goes alone; Do refuses to set such a watch). Paths are
// sorted: the order is the same on every run.
func setWatches(ws map[watchKey][]*watchEntry, zxid int64, limit int) []*setWatchesRequest {
	if len(ws) == 0 {
		return nil
	}
	keys := make([]watchKey, 0, len(ws))
	for k, es := range ws {
		if len(es) > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b watchKey) int {
		if a.kind != b.kind {
			return int(a.kind - b.kind)
		}
		switch {
		case a.path < b.path:
			return -1
		case a.path > b.path:
			return 1
		}
		return 0
	})
	var reqs []*setWatchesRequest
	var cur *setWatchesRequest
	size := 0
	for _, k := range keys {
		add := 4 + len(k.path)
		if cur == nil || size+add > limit {
			cur = &setWatchesRequest{RelativeZxid: zxid, DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{}}
			reqs = append(reqs, cur)
			size = setWatchesHeader
		}
		size += add
		switch k.kind {
		case watchData:
			cur.DataWatches = append(cur.DataWatches, k.path)
		case watchExist:
			cur.ExistWatches = append(cur.ExistWatches, k.path)
		case watchChild:
			cur.ChildWatches = append(cur.ChildWatches, k.path)
		}
	}
	return reqs
}

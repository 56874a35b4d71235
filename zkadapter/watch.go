package zkadapter

import (
	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// watchEntry is one watch set by a successful request: go-zookeeper's
// channel for it (it receives one event and is closed) and the Conn's
// callback, which runs once.
type watchEntry struct {
	path string
	fn   func(task.Event)
}

// addWatch registers the watch of cl and starts the goroutine that waits
// on its channel. c.mu must be held.
//
// go-zookeeper closes every watch channel in the end: after a node event,
// on expiry (EventNotWatching, Err ErrSessionExpired) and when its loop
// returns after Close (EventNotWatching, Err ErrClosing). So the goroutine
// always returns, and Close waits for it.
func (c *Conn) addWatch(cl *call, ch <-chan zk.Event) {
	w := &watchEntry{path: cl.req.NodePath(), fn: cl.watch}
	c.watches[w] = struct{}{}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ev, ok := <-ch
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, live := c.watches[w]; !live {
			return // expire or Close delivered it already
		}
		c.fire(w, watchEvent(w.path, ev, ok))
	}()
}

// fire removes w and queues its one call. c.mu must be held.
func (c *Conn) fire(w *watchEntry, ev task.Event) {
	delete(c.watches, w)
	fn := w.fn
	c.q.push(func() { fn(ev) })
}

func watchEvent(path string, ev zk.Event, ok bool) task.Event {
	if !ok || ev.Type == zk.EventNotWatching {
		st := task.StateClosed
		if ev.Err == zk.ErrSessionExpired {
			st = task.StateExpired
		}
		return task.Event{Type: task.EventNotWatching, State: st, Path: path}
	}
	return task.Event{Type: task.EventType(ev.Type), Path: path, State: task.StateConnected}
}

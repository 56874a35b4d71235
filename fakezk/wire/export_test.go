package wire

import "sync/atomic"

// HoldRead makes the first link that reads a request op on path wait,
// before serving it, until release is closed (held is closed once it
// waits), and close ended when that link's reader has returned. The
// returned reset removes the hooks.
func HoldRead(op Op, path string) (held, ended <-chan struct{}, release chan<- struct{}, reset func()) {
	h, e, rel := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var mine atomic.Pointer[link]
	read := func(lk *link, r *Request) {
		if r.Op == op && r.Path == path && mine.CompareAndSwap(nil, lk) {
			close(h)
			<-rel
		}
	}
	end := func(lk *link) {
		if mine.Load() == lk {
			close(e)
		}
	}
	testHookRead.Store(&read)
	testHookEnd.Store(&end)
	return h, e, rel, func() { testHookRead.Store(nil); testHookEnd.Store(nil) }
}

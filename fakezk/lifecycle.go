package fakezk

import "github.com/zkflow/zkflow/task"

// deliverLoop is Async mode's delivery goroutine.
func (s *Server) deliverLoop() {
	defer close(s.stopped)
	for {
		select {
		case <-s.kick:
			s.drain()
		case <-s.stop:
			s.drain()
			return
		}
	}
}

// Close stops the server: its pending clock timers are stopped and, in
// Async mode, its delivery goroutine delivers what is queued and exits.
// Conns are not closed (a stopped server cannot hear them); use them no
// more. Close is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, c := range s.conns {
		for _, t := range []*task.Timer{&c.heal, &c.holdTimer, &c.thaw, &c.retry} {
			if *t != nil {
				(*t).Stop()
				*t = nil
			}
		}
	}
	for _, id := range s.sessionIDs() {
		s.stopExpiry(s.sessions[id])
	}
	s.stopReaper()
	for _, t := range s.timers {
		t.Stop()
	}
	s.timers = nil
	s.mu.Unlock()
	if s.stop != nil {
		close(s.stop)
		<-s.stopped
	}
	return nil
}

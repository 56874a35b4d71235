package election

import "github.com/zkflow/zkflow/task"

// blinks counts the suspensions of the connection a campaign has seen. A
// read's continuation runs from the task queue, which is paused while the
// connection is down: a reply that arrived just before a disconnect is
// acted on only after the reconnect, however long that took. A campaign
// compares the count at the read and at the grant, and reads again if
// they differ, so leadership is never granted on a read older than the
// last suspension (during which the server may have let another
// candidate lead). Executor goroutine.
type blinks struct {
	n     int
	unsub func()
}

func followBlinks(s *task.Scope) *blinks {
	b := &blinks{}
	b.unsub = s.Subscribe(func(ev task.Event) {
		if ev.Type == task.EventNone && ev.State != task.StateConnected {
			b.n++
		}
	})
	return b
}

// stop ends the subscription; idempotent.
func (b *blinks) stop() {
	if b.unsub != nil {
		b.unsub()
		b.unsub = nil
	}
}

// until wraps k so that the subscription ends when the campaign does.
func until[T any](b *blinks, k task.Cont[T]) task.Cont[T] {
	return func(v T, err error) {
		b.stop()
		k(v, err)
	}
}

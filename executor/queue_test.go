package executor

import (
	"testing"

	"github.com/zkflow/zkflow/task"
)

// TestQueueOrderAcrossGrowth pushes and pops in uneven rounds so that the
// ring wraps before it grows: jobs, their responses and their events come
// out in the order they went in, each response or event beside its own
// job. The notices' Watcher is a Receiver too (as a watched request's
// wait is): it still comes out as a notice, with an event, and takes no
// response.
func TestQueueOrderAcrossGrowth(t *testing.T) {
	var q queue
	rcv := recvFunc(func(task.Response) {})
	w := &recvWatcher{}
	pushed, popped := 0, 0
	pop := func() {
		t.Helper()
		var j job
		var resp task.Response
		var ev task.Event
		if !q.pop(&j, &resp, &ev) {
			t.Fatalf("pop %d: queue empty with %d pushed", popped, pushed)
		}
		switch popped % 3 {
		case 0:
			if j.fn != nil || j.kind != jobOutcome || resp.Stat.Version != int32(popped) {
				t.Fatalf("pop %d: want the outcome of push %d, got %+v with response of push %d", popped, popped, j, resp.Stat.Version)
			}
		case 1:
			if j.kind != jobNotice || j.x != task.Watcher(w) || ev.SessionID != int64(popped) || resp.Stat.Version != 0 {
				t.Fatalf("pop %d: want the notice of push %d, got %+v with event of push %d", popped, popped, j, ev.SessionID)
			}
		default:
			if j.fn == nil || j.kind != jobFunc {
				t.Fatalf("pop %d: want a function, got %+v", popped, j)
			}
		}
		popped++
	}
	for round := 0; round < 40; round++ {
		for i := 0; i < round%7+3; i++ {
			switch pushed % 3 {
			case 0:
				q.push(job{x: rcv}, &task.Response{Path: string(rune('a' + pushed%26)), Stat: task.Stat{Version: int32(pushed)}})
			case 1:
				q.pushNotice(w, &task.Event{Type: task.EventNodeDeleted, SessionID: int64(pushed)})
			default:
				n := pushed
				q.push(job{fn: func() { _ = n }, x: nil}, nil)
			}
			pushed++
		}
		for i := 0; i < round%5+1 && popped < pushed; i++ {
			pop()
		}
	}
	for popped < pushed {
		pop()
	}
	var j job
	var resp task.Response
	var ev task.Event
	if q.pop(&j, &resp, &ev) {
		t.Fatal("pop on an empty queue reported a job")
	}
}

type recvFunc func(task.Response)

func (f recvFunc) Receive(r task.Response) { f(r) }

// recvWatcher is a Watcher that is also a Receiver.
type recvWatcher struct{}

func (*recvWatcher) Receive(task.Response) {}
func (*recvWatcher) Notify(task.Event)     {}

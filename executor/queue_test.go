package executor

import (
	"testing"

	"github.com/zkflow/zkflow/task"
)

// TestQueueOrderAcrossGrowth pushes and pops in uneven rounds so that the
// ring wraps before it grows: jobs and their responses come out in the
// order they went in, each response beside its own job.
func TestQueueOrderAcrossGrowth(t *testing.T) {
	var q queue
	rcv := recvFunc(func(task.Response) {})
	pushed, popped := 0, 0
	for round := 0; round < 40; round++ {
		for i := 0; i < round%7+3; i++ {
			if pushed%3 == 0 {
				q.push(job{x: rcv}, &task.Response{Path: string(rune('a' + pushed%26)), Stat: task.Stat{Version: int32(pushed)}})
			} else {
				n := pushed
				q.push(job{fn: func() { _ = n }, x: nil}, nil)
			}
			pushed++
		}
		for i := 0; i < round%5+1 && popped < pushed; i++ {
			var j job
			var resp task.Response
			if !q.pop(&j, &resp) {
				t.Fatalf("pop %d: queue empty with %d pushed", popped, pushed)
			}
			if got := j.fn == nil; got != (popped%3 == 0) {
				t.Fatalf("pop %d: outcome %v, want %v", popped, got, popped%3 == 0)
			}
			if popped%3 == 0 && resp.Stat.Version != int32(popped) {
				t.Fatalf("pop %d: response of push %d", popped, resp.Stat.Version)
			}
			popped++
		}
	}
	for popped < pushed {
		var j job
		var resp task.Response
		if !q.pop(&j, &resp) {
			t.Fatalf("pop %d: queue empty with %d pushed", popped, pushed)
		}
		if popped%3 == 0 && resp.Stat.Version != int32(popped) {
			t.Fatalf("pop %d: response of push %d", popped, resp.Stat.Version)
		}
		popped++
	}
	var j job
	var resp task.Response
	if q.pop(&j, &resp) {
		t.Fatal("pop on an empty queue reported a job")
	}
}

type recvFunc func(task.Response)

func (f recvFunc) Receive(r task.Response) { f(r) }

package scriptconn_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/internal/scriptconn"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRecordAndReplyOnce(t *testing.T) {
	c := scriptconn.New()
	var states []task.State
	c.Start(func(ev task.Event) { states = append(states, ev.State) })
	c.Connect(7)
	got := 0
	c.Do(&task.GetDataRequest{Path: "/a"}, func(r task.Response) { got++ }, nil)
	if len(c.Pending()) != 1 {
		t.Fatal("request not recorded")
	}
	c.Pending()[0].Reply(task.Response{})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("second reply did not panic")
			}
		}()
		c.Calls()[0].Reply(task.Response{})
	}()
	c.Do(&task.GetDataRequest{Path: "/b"}, func(r task.Response) {
		if r.Err != task.ErrClosed {
			t.Errorf("pending at close: %v", r.Err)
		}
		got++
	}, nil)
	c.Close()
	if got != 2 || len(states) != 2 || states[1] != task.StateClosed {
		t.Fatalf("got %d replies, states %v", got, states)
	}
}

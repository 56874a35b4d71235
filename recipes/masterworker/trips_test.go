package masterworker_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// tripLog records the requests its client sends (type and path, in the
// order sent) and the round trips: a request sent before the replies to
// every earlier one arrived shares their round trip.
type tripLog struct {
	*fakezk.Conn
	sent     []string
	trips    int
	inFlight int
}

func (c *tripLog) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.sent = append(c.sent, fmt.Sprintf("%s %s", req.OpName(), req.NodePath()))
	if c.inFlight == 0 {
		c.trips++
	}
	c.inFlight++
	c.Conn.Do(req, func(resp task.Response) {
		c.inFlight--
		done(resp)
	}, watch)
}

// Find of a task waiting in /tasks takes one round trip: its sync and
// its listing are sent together (the listing is still answered from a
// state no older than the sync's: TestResubmitOnLaggingMemberFindsTheTask).
func TestFindWaitingTaskInOneRoundTrip(t *testing.T) {
	var log *tripLog
	w := newWorld(t, 1, func(_ int, conn *fakezk.Conn) task.Conn {
		log = &tripLog{Conn: conn}
		return log
	})
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	name, err := sim.Run(w, 0, sys.Submit("p1_1", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	log.sent, log.trips = nil, 0
	found, err := sim.Run(w, 0, sys.Find("p1_1"))
	if err != nil || found != name {
		t.Fatalf("Find: %q, %v; want %q", found, err, name)
	}
	if want := []string{"sync /mw/tasks", "children /mw/tasks"}; !slices.Equal(log.sent, want) || log.trips != 1 {
		t.Fatalf("Find sent %q in %d round trips; want %q in 1", log.sent, log.trips, want)
	}
}

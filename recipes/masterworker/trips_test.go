package masterworker_test

import (
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// Find of a task waiting in /tasks takes one round trip: its sync and
// its listing are sent together (the listing is still answered from a
// state no older than the sync's: TestResubmitOnLaggingMemberFindsTheTask).
func TestFindWaitingTaskInOneRoundTrip(t *testing.T) {
	var log *sim.RequestLog
	w := newWorld(t, 1, func(_ int, conn *fakezk.Conn) task.Conn {
		log = &sim.RequestLog{Conn: conn}
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
	log.Reset()
	found, err := sim.Run(w, 0, sys.Find("p1_1"))
	if err != nil || found != name {
		t.Fatalf("Find: %q, %v; want %q", found, err, name)
	}
	if want := []string{"sync /mw/tasks", "children /mw/tasks"}; !slices.Equal(log.Sent, want) || log.Trips != 1 {
		t.Fatalf("Find sent %q in %d round trips; want %q in 1", log.Sent, log.Trips, want)
	}
}

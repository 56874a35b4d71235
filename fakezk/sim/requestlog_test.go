package sim_test

import (
	"errors"
	"slices"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// RequestLog: requests in the order sent, a watch marked, the requests
// waiting at each send, round trips (two sent together share one), and
// Lose: the request is applied, its reply lost.
func TestRequestLog(t *testing.T) {
	var log *sim.RequestLog
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: func(_ int, conn *fakezk.Conn) task.Conn {
		log = &sim.RequestLog{Conn: conn}
		return log
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := sim.Run(w, 0, task.Create("/a", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, c.All(task.Exists("/a"), task.Exists("/b"))); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 0, task.ExistsW("/a")); err != nil {
		t.Fatal(err)
	}
	want := []string{"create /a", "exists /a", "exists /b", "exists /a (watch)"}
	if !slices.Equal(log.Sent, want) || !slices.Equal(log.Waiting, []int{0, 0, 1, 0}) || log.Trips != 3 {
		t.Fatalf("sent %q, waiting %v, %d trips; want %q, [0 0 1 0], 3", log.Sent, log.Waiting, log.Trips, want)
	}
	log.Reset()
	log.Lose = func(req task.Request) bool { _, ok := req.(*task.CreateRequest); return ok }
	if _, err := sim.Run(w, 0, task.Create("/c", nil, task.Persistent)); !errors.Is(err, task.ErrConnectionLoss) {
		t.Fatalf("create with its reply lost: %v, want connection loss", err)
	}
	if _, ok := w.Server.NodeStat("/c"); !ok || log.Lose != nil || !slices.Equal(log.Sent, []string{"create /c"}) || log.Trips != 1 {
		t.Fatalf("after a lost reply: node there %v, Lose cleared %v, sent %q in %d trips", ok, log.Lose == nil, log.Sent, log.Trips)
	}
}

package masterworker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// A Wait leaves no watch behind on the status it read: an exists watch
// on a status node that exists is a data watch, which nothing fires (a
// status is never changed) until the session ends, so a long-lived
// Client kept one per task it waited for. Wait reads first, and watches
// only while there is no status. Checked for a status there before the
// Wait and one made while it waits: no exists of the submitter is
// answered with a Stat (a watch set on an existing status). With the
// canary masterworker/wait-watches-status (a watch first, and again once
// it fired), each Wait leaves one.
func TestWaitLeavesNoWatchOnItsStatus(t *testing.T) {
	if n := waitWatchesLeft(t); n != 0 {
		t.Fatalf("%d exists watches set on a status that existed: each stays until the session ends", n)
	}
	defer canary.Enable(masterworker.BugWaitWatchesStatus)()
	if n := waitWatchesLeft(t); n == 0 {
		t.Fatal("with the canary on, no watch was left: the test misses the leak")
	}
}

// waitWatchesLeft runs two Waits of client 2 (one after the status was
// made, one before) and counts its exists watches answered with a Stat.
func waitWatchesLeft(t *testing.T) int {
	left := 0
	wrap := func(i int, conn *fakezk.Conn) task.Conn {
		if i != 2 {
			return conn
		}
		return &watchCounter{Conn: conn, left: &left}
	}
	w, sys := setupWorld(t, sim.Config{Seed: 1, Clients: 3, Wrap: wrap})
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	executor.Submit(w.Execs[0], m.Run(), nil)
	executor.Submit(w.Execs[1], wk.Run(), nil)
	for n := range 2 {
		id := fmt.Sprintf("s%d", n)
		var name string
		executor.Submit(w.Execs[2], sys.Submit(id, []byte(id)), func(v string, err error) {
			if err != nil {
				t.Errorf("submit %s: %v", id, err)
			}
			name = v
		})
		if !w.Settle(func() bool { return name != "" }) {
			t.Fatal("submit did not end")
		}
		if n == 0 { // its status made first
			if !w.Settle(func() bool { _, ok := w.NodeStat(sys.StatusPath(name)); return ok }) {
				t.Fatal("no status")
			}
		}
		done := false
		executor.Submit(w.Execs[2], sys.Wait(name), func(res masterworker.Result, err error) {
			if err != nil || string(res.Data) != id {
				t.Errorf("wait %s: %+v, %v", name, res, err)
			}
			done = true
		})
		if !w.Settle(func() bool { return done }) {
			t.Fatal("wait did not end")
		}
	}
	return left
}

// watchCounter counts the exists watches set on a status that exists
// (answered with a Stat).
type watchCounter struct {
	*fakezk.Conn
	left *int
}

func (c *watchCounter) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	ex, ok := req.(*task.ExistsRequest)
	if !ok || watch == nil || !strings.Contains(ex.Path, "/status/") {
		c.Conn.Do(req, done, watch)
		return
	}
	c.Conn.Do(req, func(resp task.Response) {
		if resp.Err == nil { // it exists: a data watch set on it
			*c.left++
		}
		done(resp)
	}, watch)
}

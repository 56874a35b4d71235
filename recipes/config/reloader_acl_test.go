package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/task"
)

// A Reloader whose watcher ends on its own (an operator's ACL refuses a
// read: an error no retry settles) leaves no run going: its run is
// canceled with that error, and Done closes only once the run and its
// cleanups have ended, so a caller that starts a new Reloader when Done
// closes never has two runs at once. (The run used to go on, with the
// last configuration and no one to stop it, and Done closed as the
// watcher ended.)
func TestReloaderEndedByARefusalEndsItsRun(t *testing.T) {
	w := newWorld(t, 2)
	mkdir(t, w, "/cfg")
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("1")}))
	var log []string
	apply := func(s Snapshot) task.Task[task.Unit] {
		return func(sc *task.Scope, k task.Cont[task.Unit]) {
			log = append(log, "start "+string(s.Values["v"]))
			sc.Defer(c.Sleep(time.Second)) // a cleanup that takes a while
			task.Suspend(sc, func(_ task.Unit, err error) {
				log = append(log, "end: "+err.Error())
				k(task.Unit{}, err)
			}, func(task.Cont[task.Unit]) func() { return nil })
		}
	}
	r := run(t, w, 0, Reload("/cfg", DirOptions{}, apply))
	secret := []task.ACL{task.DigestACL(task.PermAll, "alice", "pw")}
	run(t, w, 1, task.CreateWith(&task.CreateRequest{Path: "/cfg/w", Data: []byte("x"), Mode: task.Persistent, ACL: secret}))
	until := w.Clock.Now().Add(3 * w.Timeout())
	w.Settle(func() bool { return closedNow(r.Done()) || !w.Clock.Now().Before(until) })
	if !closedNow(r.Done()) || !errors.Is(r.Err(), task.ErrNoAuth) {
		t.Fatalf("the Reloader whose watcher a refusal ended: done %v, Err %v; want ended with ErrNoAuth", closedNow(r.Done()), r.Err())
	}
	if r.Active() != 0 {
		t.Fatalf("Done closed with %d runs going, want none (log %v)", r.Active(), log)
	}
	if want := []string{"start 1", "end: " + r.Err().Error()}; strings.Join(log, "|") != strings.Join(want, "|") {
		t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

func closedNow(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

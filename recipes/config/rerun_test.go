package config

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// The task package's contract (task.Task): "Running a task twice does
// the work twice"; the package doc: "Watch, WatchDir, Update,
// UpdateMarked and Reload return task.Task values to run on an executor
// yourself". The watcher (and the Reloader) was made once per task
// value, when Watch, WatchDir or Reload was called: a second run of the
// same task value started the same cache again and failed with
// cache.ErrStarted (task.ErrInvalidArgument), a run again after an
// expiry included (executor.AwaitAcrossExpiry, the way the package doc
// itself runs UpdateMarked again). Each run now follows the
// configuration with a watcher of its own.
func TestWatchTaskRunTwiceWatchesTwice(t *testing.T) {
	w := newWorld(t, 2)
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("1")}))
	var got []string
	h := func(s Snapshot) {
		if s.Data != nil {
			got = append(got, string(s.Data))
			return
		}
		got = append(got, string(s.Values["v"]))
	}
	var runs []string
	apply := func(s Snapshot) task.Task[task.Unit] {
		runs = append(runs, string(s.Values["v"]))
		return task.Done
	}
	watch, watchDir, reload := Watch("/cfg/v", h), WatchDir("/cfg", DirOptions{}, h), Reload("/cfg", DirOptions{}, apply)
	var ws []*Watcher
	var rs []*Reloader
	for i := 0; i < 2; i++ {
		for _, tk := range []task.Task[*Watcher]{watch, watchDir} {
			v, err := sim.Run(w, 0, tk)
			if err != nil {
				t.Fatalf("run %d of one watch task: %v", i+1, err)
			}
			ws = append(ws, v)
		}
		r, err := sim.Run(w, 0, reload)
		if err != nil {
			t.Fatalf("run %d of one Reload task: %v", i+1, err)
		}
		rs = append(rs, r)
	}
	if ws[0] == ws[2] || ws[1] == ws[3] || rs[0] == rs[1] {
		t.Fatal("two runs of one task value share their watcher")
	}
	// Stopped, the first runs' watchers leave the second runs' going.
	run(t, w, 0, ws[0].Stop())
	run(t, w, 0, ws[1].Stop())
	run(t, w, 0, rs[0].Stop())
	got, runs = nil, nil
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("2")}))
	w.Settle(func() bool { return len(got) == 2 && len(runs) == 1 })
	if len(got) != 2 || got[0] != "2" || got[1] != "2" || len(runs) != 1 || runs[0] != "2" {
		t.Errorf("after the first runs stopped: the second runs' watchers delivered %q, the Reloader ran %q; want 2 twice and 2", got, runs)
	}
	run(t, w, 0, ws[2].Stop())
	run(t, w, 0, ws[3].Stop())
	run(t, w, 0, rs[1].Stop())
}

// The same, across an expiry: the session expires before the watcher's
// first read is answered, and the task value is run again on the next
// session, as executor.AwaitAcrossExpiry does.
func TestWatchDirRunAgainAcrossExpiry(t *testing.T) {
	w := newWorld(t, 2)
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("1")}))
	var got []string
	watch := WatchDir("/cfg", DirOptions{}, func(s Snapshot) { got = append(got, string(s.Values["v"])) })
	var wt *Watcher
	var werr error
	ended := false
	var across func()
	across = func() {
		executor.Submit(w.Execs[0], watch, func(v *Watcher, err error) {
			if errors.Is(err, task.ErrSessionExpired) {
				across()
				return
			}
			wt, werr, ended = v, err, true
		})
	}
	across()
	w.Server.Expire(w.Conns[0]) // before the executor ran the watch's first read
	w.Settle(func() bool { return ended })
	if !ended || werr != nil {
		t.Fatalf("WatchDir run again after an expiry: ended %v, %v", ended, werr)
	}
	run(t, w, 1, Update("/cfg", map[string][]byte{"v": []byte("2")}))
	w.Settle(func() bool { return len(got) > 0 && got[len(got)-1] == "2" })
	if len(got) == 0 || got[len(got)-1] != "2" {
		t.Errorf("the watcher run again after the expiry delivered %q, want 2 last", got)
	}
	run(t, w, 0, wt.Stop())
}

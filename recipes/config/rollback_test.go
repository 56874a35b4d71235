package config_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

// An UpdateMarked whose write is refused for good (an entry over the data
// limit, refused before it is sent) is rolled back: the entries it wrote
// get their values back (one that did not exist is deleted), its marker
// goes, it fails with the write's error, and the next update goes
// through. With the marker left standing (the canary, as before), the
// next update waits for good.
func TestMarkedUpdateRefusedForGoodRollsBack(t *testing.T) {
	canarytest.Both(t, "config/marked-no-rollback", func(t *testing.T, bug bool) {
		w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Close)
		for _, p := range []string{"/cfg", "/cfg/b", "/cfg/c"} {
			if _, err := sim.Run(w, 1, task.Create(p, []byte("0"), task.Persistent)); err != nil {
				t.Fatal(err)
			}
		}
		// a (new) and b are written before c, which is too large.
		_, err = sim.Run(w, 0, config.UpdateMarked("/cfg", map[string][]byte{
			"a": []byte("1"), "b": []byte("1"), "c": bytes.Repeat([]byte("x"), task.MaxDataSize)}))
		if !errors.Is(err, task.ErrDataTooLarge) {
			t.Fatalf("UpdateMarked with an entry over the limit: %v; want ErrDataTooLarge", err)
		}
		next := sim.Submit(w, 1, config.Update("/cfg", map[string][]byte{"b": []byte("2")}))
		w.Settle(func() bool { return next.Done })
		w.Clock.Advance(time.Minute)
		w.Drive()
		if bug {
			if next.Done || data(w, "/cfg/"+config.MarkerName) == "<none>" {
				t.Errorf("with the marker left, the next update ended (%v): the test would not see the bug", next.Err)
			}
			return
		}
		if m := data(w, "/cfg/"+config.MarkerName); m != "<none>" {
			t.Errorf("marker %q left", m)
		}
		if a, c := data(w, "/cfg/a"), data(w, "/cfg/c"); a != "<none>" || c != "0" {
			t.Errorf("after the rollback a=%s c=%s; want a gone (it did not exist) and c=0", a, c)
		}
		if !next.Done || next.Err != nil || data(w, "/cfg/b") != "2" {
			t.Errorf("the next update: done %v, %v, b=%s; want it applied", next.Done, next.Err, data(w, "/cfg/b"))
		}
	})
}

// A write of an UpdateMarked that an operator's ACL refuses for a while
// is tried again until the ACL lets it: the update completes, and so does
// the one after it.
func TestMarkedUpdateWaitsOutAnACL(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	for _, p := range []string{"/cfg", "/cfg/a", "/cfg/b"} {
		if _, err := sim.Run(w, 1, task.Create(p, []byte("0"), task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.AdminSetACL("/cfg/b", []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}); err != nil {
		t.Fatal(err)
	}
	up := sim.Submit(w, 0, config.UpdateMarked("/cfg", map[string][]byte{"a": []byte("1"), "b": []byte("1")}))
	if !w.Settle(func() bool { return data(w, "/cfg/a") == "1" }) {
		t.Fatal("the first entry was never written")
	}
	w.Clock.Advance(30 * time.Second)
	w.Drive()
	if up.Done {
		t.Fatalf("UpdateMarked ended while the ACL refused its write: %v", up.Err)
	}
	if err := w.Server.AdminSetACL("/cfg/b", task.OpenACL); err != nil {
		t.Fatal(err)
	}
	next := sim.Submit(w, 1, config.Update("/cfg", map[string][]byte{"a": []byte("2"), "b": []byte("2")}))
	if !w.Settle(func() bool { return up.Done && next.Done }) {
		t.Fatal("the updates never ended once the ACL let them")
	}
	if up.Err != nil || next.Err != nil || data(w, "/cfg/a") != "2" || data(w, "/cfg/b") != "2" {
		t.Errorf("UpdateMarked %v, Update %v, a=%s b=%s; want both applied, in order", up.Err, next.Err, data(w, "/cfg/a"), data(w, "/cfg/b"))
	}
}

// A directory's snapshot leaves the invalid marker out of its Values
// also for a reader that does not honour it (DirOptions.Marker false):
// the marker is no entry, and its data is a writer's token.
func TestSnapshotLeavesTheMarkerOut(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	for _, p := range []string{"/cfg", "/cfg/a", "/cfg/" + config.MarkerName} {
		if _, err := sim.Run(w, 0, task.Create(p, []byte("0"), task.Persistent)); err != nil {
			t.Fatal(err)
		}
	}
	var got []config.Snapshot
	if _, err := sim.Run(w, 0, config.WatchDir("/cfg", config.DirOptions{}, func(s config.Snapshot) { got = append(got, s) })); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if len(got) == 0 {
		t.Fatal("nothing delivered: a reader that does not honour the marker delivers while it stands")
	}
	if _, in := got[0].Values[config.MarkerName]; in || len(got[0].Values) != 1 {
		t.Errorf("Values %v; want a only, the marker left out", got[0].Values)
	}
}

package config

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/task"
)

// Update's doc: the multi "fails at once if an update made one write at
// a time (UpdateMarked) holds the marker; Update then waits for the
// marker to go and tries again"; UpdateMarked's: "if it exists with
// another token, wait until it is deleted and try again". Another user
// of the writer's session takes the wait's watch away: a recursive cache
// of the marker's path on the same executor stops, and its RemoveWatches
// (of type Any) ends every watch of the session on the path, the
// writer's exists watch on the marker too. Both writes failed with
// task.ErrWatchRemoved while the marker stood, the update not made; they
// wait on now (a removed watch is one more wake-up), and complete once
// the marker goes. Fails on the code before the fix.
func TestWriterWaitOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(map[string][]byte) task.Task[task.Unit]
	}{
		{"Update", func(v map[string][]byte) task.Task[task.Unit] { return Update("/cfg", v) }},
		{"UpdateMarked", func(v map[string][]byte) task.Task[task.Unit] { return UpdateMarked("/cfg", v) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 2)
			run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1")}))
			marker := "/cfg/" + MarkerName
			if err := w.Server.AdminCreate(marker, nil, 0); err != nil {
				t.Fatal(err)
			}
			o := sim.Submit(w, 0, tc.write(map[string][]byte{"a": []byte("2")}))
			w.Drive()
			rc, err := cache.NewTree(marker, cache.WithRecursive())
			if err != nil {
				t.Fatal(err)
			}
			run(t, w, 0, rc.Start())
			run(t, w, 0, rc.Stop())
			for i := 0; i < 100 && !o.Done; i++ {
				w.Drive()
				w.Clock.Advance(100 * time.Millisecond)
			}
			if o.Done {
				t.Fatalf("the write ended while the marker stands, after another user of the session removed the watches on %s: %v", marker, o.Err)
			}
			if err := w.Server.AdminDelete(marker); err != nil {
				t.Fatal(err)
			}
			if !w.Settle(func() bool { return o.Done }) || o.Err != nil {
				t.Fatalf("after the marker went: done %v, %v", o.Done, o.Err)
			}
			if d, _, ok := w.Server.NodeData("/cfg/a"); !ok || string(d) != "2" {
				t.Fatalf("/cfg/a = %q, want the writer's 2", d)
			}
		})
	}
}

// The package doc: "The final state is never missed". Another user of a
// reader's session removes every watch of the session on the root and
// on an entry (task.RemoveWatches of type Any, as a recursive cache of
// the same path does when it stops), for each kind of reader, the
// recursive one included: the reader neither ends nor misses the
// updates made after. Holds (the caches read again on a removed watch).
func TestReaderOutlivesWatchesRemovedByAnotherUser(t *testing.T) {
	for _, tc := range []struct {
		name  string
		watch func(h func(Snapshot)) task.Task[*Watcher]
		value func(Snapshot) string
	}{
		{"Watch", func(h func(Snapshot)) task.Task[*Watcher] { return Watch("/cfg/a", h) }, func(s Snapshot) string { return string(s.Data) }},
		{"WatchDir", func(h func(Snapshot)) task.Task[*Watcher] { return WatchDir("/cfg", DirOptions{Marker: true}, h) }, func(s Snapshot) string { return string(s.Values["a"]) }},
		{"Subtree", func(h func(Snapshot)) task.Task[*Watcher] {
			return WatchDir("/cfg", DirOptions{Marker: true, Subtree: true}, h)
		}, func(s Snapshot) string { return string(s.Values["a"]) }},
		{"Recursive", func(h func(Snapshot)) task.Task[*Watcher] {
			return WatchDir("/cfg", DirOptions{Marker: true, Subtree: true, Recursive: true}, h)
		}, func(s Snapshot) string { return string(s.Values["a"]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 2)
			run(t, w, 1, Update("/cfg", map[string][]byte{"a": []byte("1")}))
			var got []string
			wt := run(t, w, 0, tc.watch(func(s Snapshot) { got = append(got, tc.value(s)) }))
			for _, p := range []string{"/cfg", "/cfg/a", "/cfg/" + MarkerName} {
				rc, err := cache.NewTree(p, cache.WithRecursive())
				if err != nil {
					t.Fatal(err)
				}
				run(t, w, 0, rc.Start())
				run(t, w, 0, rc.Stop())
			}
			w.Drive()
			for v := 2; v <= 3; v++ {
				want := string(rune('0' + v))
				write := Update("/cfg", map[string][]byte{"a": []byte(want)})
				if v == 3 {
					write = UpdateMarked("/cfg", map[string][]byte{"a": []byte(want)})
				}
				run(t, w, 1, write)
				if !w.Settle(func() bool { return len(got) > 0 && got[len(got)-1] == want }) {
					t.Fatalf("delivered %v, want %s last (watcher's error %v)", got, want, wt.Err())
				}
				if err := wt.Err(); err != nil {
					t.Fatalf("the watcher ended: %v", err)
				}
			}
			run(t, w, 0, wt.Stop())
		})
	}
}

package election_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// newSentWorld: client 0's requests are recorded (sim.RequestLog).
func newSentWorld(t *testing.T) (*sim.World, *sim.RequestLog) {
	t.Helper()
	var log *sim.RequestLog
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, conn *fakezk.Conn) task.Conn {
		if i == 0 {
			log = &sim.RequestLog{Conn: conn}
			return log
		}
		return conn
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := mustRun(t, w, 1, task.Create("/svc", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	if _, err := mustRun(t, w, 1, task.Create("/svc/el", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	return w, log
}

// An uncontended term: the create; the sync, the listing and the read of
// the candidate's own node, sent together; the exists that watches the
// node while leading (sent once leadership is granted, beside the
// leader's work); the delete at the version the grant read. Six
// requests; three round trips on the term's path, the watch's besides.
func TestUncontendedTermRequests(t *testing.T) {
	w, log := newSentWorld(t)
	l, err := mustRun(t, w, 0, mustElection(t, "/svc/el").Campaign())
	if err != nil {
		t.Fatal(err)
	}
	w.Settle(func() bool { return false }) // the leadership's watch is armed
	node := l.Path()
	if _, err := mustRun(t, w, 0, l.Resign()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create /svc/el/_c_",
		"sync /svc/el",
		"children /svc/el",
		"exists " + node,
		"exists " + node + " (watch)",
		"delete " + node,
	}
	if len(log.Sent) != len(want) {
		t.Fatalf("requests sent: %q, want %q", log.Sent, want)
	}
	for i := range want {
		if i == 0 && len(log.Sent[0]) >= len(want[0]) && log.Sent[0][:len(want[0])] == want[0] {
			continue
		}
		if log.Sent[i] != want[i] {
			t.Fatalf("request %d: %q, want %q (all: %q)", i, log.Sent[i], want[i], log.Sent)
		}
	}
	if log.Trips != 4 {
		t.Fatalf("%d round trips, want 4 (the create, the three reads together, the watch's, the delete)", log.Trips)
	}
	if ch := w.Children("/svc/el"); len(ch) != 0 {
		t.Fatalf("%v still there after Resign", ch)
	}
}

// The delete at the version the grant read is not sent again once its
// reply is lost: the retry reads the node first (gone: success). A node
// written by someone else since the grant (a bad version: the leadership
// ends, ErrLost, and deletes its node) is read and deleted as our
// incarnation.
func TestResignDeleteFallsBackToRead(t *testing.T) {
	for _, tc := range []string{"reply lost", "bad version"} {
		t.Run(tc, func(t *testing.T) {
			w, log := newSentWorld(t)
			l, err := mustRun(t, w, 0, mustElection(t, "/svc/el").Campaign())
			if err != nil {
				t.Fatal(err)
			}
			node := l.Path()
			w.Settle(func() bool { return false })
			from := len(log.Sent)
			if tc == "bad version" {
				if _, err := mustRun(t, w, 1, task.Set(node, []byte("x"), task.AnyVersion)); err != nil {
					t.Fatal(err)
				}
				w.Settle(func() bool { return false })
				if !errors.Is(l.Err(), election.ErrLost) {
					t.Fatalf("leadership after its node was written: %v, want ErrLost", l.Err())
				}
			} else {
				log.Lose = func(req task.Request) bool { _, ok := req.(*task.DeleteRequest); return ok }
			}
			if _, err := mustRun(t, w, 0, l.Resign()); err != nil {
				t.Fatal(err)
			}
			if ch := w.Children("/svc/el"); len(ch) != 0 {
				t.Fatalf("%v still there after Resign", ch)
			}
			var dels []string // the deletes and reads of the node, in order
			for _, r := range log.Sent[from:] {
				if r == "delete "+node || r == "exists "+node {
					dels = append(dels, r)
				}
			}
			want := []string{"delete " + node, "exists " + node}
			if tc == "bad version" {
				want = append(want, "delete "+node)
			}
			if len(dels) < len(want) || !slices.Equal(dels[:len(want)], want) {
				t.Fatalf("deletes and reads of the node: %q, want %q first", dels, want)
			}
			if tc == "reply lost" && count(dels, "delete "+node) != 1 {
				t.Fatalf("deletes and reads of the node: %q: the delete whose reply was lost was sent again", dels)
			}
		})
	}
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

package sim_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// TestFenceTail reads a growing fencing log with FenceTail and checks
// that the entries it returns, put together, are FenceLog's, and that it
// starts over when the log is not a continuation of what it returned.
func TestFenceTail(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	write := func(token int64, kind string) {
		t.Helper()
		if _, err := sim.Run(w, 0, task.Multi(sim.FencedEntry("/log", token, kind))); err != nil {
			t.Fatal(err)
		}
	}
	var tail sim.FenceTail
	var got []sim.LogEntry
	next := func(wantReset bool, wantNew int) {
		t.Helper()
		es, reset, err := tail.Next(w, "/log")
		if err != nil {
			t.Fatal(err)
		}
		if reset != wantReset || len(es) != wantNew {
			t.Fatalf("Next: %d entries, reset %v; want %d, %v", len(es), reset, wantNew, wantReset)
		}
		if reset {
			got = nil
		}
		got = append(got, es...)
		all, err := sim.FenceLog(w, "/log")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, all) {
			t.Fatalf("entries read so far %v, FenceLog %v", got, all)
		}
	}
	next(true, 0) // no log yet: a first call starts over
	next(false, 0)
	if _, err := sim.Run(w, 0, task.Create("/log", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	next(true, 0)
	write(1, "enter")
	write(1, "exit")
	next(false, 2)
	next(false, 0)
	write(2, "enter")
	next(false, 1)
	// An entry gone: the log is read again from the start.
	if err := w.Server.AdminDelete("/log/t1-exit-0000000001"); err != nil {
		t.Fatal(err)
	}
	write(2, "exit")
	next(true, 3)
	// The directory created again: the same.
	for _, n := range w.Children("/log") {
		if err := w.Server.AdminDelete("/log/" + n); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Server.AdminDelete("/log"); err != nil {
		t.Fatal(err)
	}
	next(true, 0)
	if _, err := sim.Run(w, 0, task.Create("/log", nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	write(3, "enter")
	next(true, 1)
	write(3, "exit")
	next(false, 1)
}

// CheckFencingOf judges a log read from any Tree: here a bare
// fakezk.Server (no World), as a run whose clients reach the server over
// TCP reads it. Entries in the server's order with tokens that never go
// down pass and count one section per token; a token that goes down, or
// a "late" entry, fails; a missing directory is an empty log.
func TestCheckFencingOfServer(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	defer srv.Close()
	if n, err := sim.CheckFencingOf(srv, "/log"); n != 0 || err != nil {
		t.Fatalf("no log: %d sections, %v", n, err)
	}
	if err := srv.AdminCreate("/log", nil, 0); err != nil {
		t.Fatal(err)
	}
	seq := 0
	add := func(token int, kind string) {
		t.Helper()
		if err := srv.AdminCreate(fmt.Sprintf("/log/t%d-%s-%010d", token, kind, seq), nil, 0); err != nil {
			t.Fatal(err)
		}
		seq++
	}
	add(1, "enter")
	add(1, "exit")
	add(3, "enter")
	add(3, "exit")
	if n, err := sim.CheckFencingOf(srv, "/log"); n != 2 || err != nil {
		t.Fatalf("two sections in order: %d sections, %v", n, err)
	}
	add(2, "exit")
	if _, err := sim.CheckFencingOf(srv, "/log"); err == nil || !strings.Contains(err.Error(), "holders interleave") {
		t.Fatalf("a token that goes down: %v", err)
	}
	if err := srv.AdminDelete(fmt.Sprintf("/log/t2-exit-%010d", seq-1)); err != nil {
		t.Fatal(err)
	}
	add(4, "late")
	if _, err := sim.CheckFencingOf(srv, "/log"); err == nil || !strings.Contains(err.Error(), "after the lock was lost") {
		t.Fatalf("a late write applied: %v", err)
	}
}

// Tokens strictly increase from one holder to the next (the docs of the
// lock, the election and partition promise it): a holder's entries open
// with its "enter" entry (sent again after a lost reply: more than one),
// so an "enter" that comes after another kind of entry of the same token
// is a second holder with that token, and fails, though no token went
// down. A holder that wrote no "enter" is judged only by the order.
func TestCheckFencingStrict(t *testing.T) {
	for _, tc := range []struct {
		name  string
		log   []string // token-kind, in the server's order
		fails bool
	}{
		{"two holders, one token", []string{"1-enter", "1-exit", "1-enter", "1-exit"}, true},
		{"after writes without enter", []string{"1-w", "1-w", "1-enter", "1-w"}, true},
		{"enter sent again after a lost reply", []string{"1-enter", "1-enter", "1-exit", "1-exit", "2-enter"}, false},
		{"writes without enter", []string{"1-w", "1-w", "2-w", "3-enter", "3-w"}, false},
		{"strictly increasing", []string{"1-enter", "1-exit", "2-enter", "2-exit"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{})
			defer srv.Close()
			if err := srv.AdminCreate("/log", nil, 0); err != nil {
				t.Fatal(err)
			}
			for seq, e := range tc.log {
				if err := srv.AdminCreate(fmt.Sprintf("/log/t%s-%010d", e, seq), nil, 0); err != nil {
					t.Fatal(err)
				}
			}
			_, err := sim.CheckFencingOf(srv, "/log")
			if tc.fails != (err != nil) {
				t.Fatalf("%v: %v", tc.log, err)
			}
			if tc.fails && !strings.Contains(err.Error(), "one token") {
				t.Fatalf("%v: failed for another reason: %v", tc.log, err)
			}
		})
	}
}

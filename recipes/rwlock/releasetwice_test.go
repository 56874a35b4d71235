package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/task"
)

// Held.Release "is idempotent: a node already gone ... is success"; a
// Client's Release "is always started, whatever ctx". A hold released
// through its Client first with an ended ctx (the delete goes on in the
// background), then again with a live one, and a read hold released
// twice with live contexts: the second Releases succeed, the hold's Err
// stays ErrUnlocked, the Client takes both modes again at once (no
// ErrAlreadyHeld, no wait behind its own node) and no node is left.
func TestReleaseTwiceThroughTheClient(t *testing.T) {
	srv, _, mutex := asyncClients(t, "/review/twice")
	cl := mutex(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ended, end := context.WithCancel(ctx)
	end()
	w, err := cl.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Release(ended, w); !errors.Is(err, task.ErrCanceled) {
		t.Fatalf("Release with an ended ctx = %v", err)
	}
	if err := cl.Release(ctx, w); err != nil {
		t.Fatalf("second Release = %v", err)
	}
	if !errors.Is(w.Err(), rwlock.ErrUnlocked) {
		t.Fatalf("Err after two Releases = %v", w.Err())
	}
	r, err := cl.TryAcquireRead(ctx)
	if err != nil {
		t.Fatalf("TryAcquireRead after the releases: %v", err)
	}
	for i := range 2 {
		if err := cl.Release(ctx, r); err != nil {
			t.Fatalf("Release %d of the read hold = %v", i, err)
		}
	}
	w, err = cl.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire after the releases: %v", err)
	}
	if err := cl.Release(ctx, w); err != nil {
		t.Fatal(err)
	}
	if n := nodes(srv, "/review/twice"); n != 0 {
		t.Fatalf("%d nodes left", n)
	}
}

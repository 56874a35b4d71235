package group_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// waitMembers waits for the watcher's next change that makes the members want.
func waitMembers(t *testing.T, ctx context.Context, w *group.Watcher, want ...string) []group.Change {
	t.Helper()
	var seen []group.Change
	for {
		ch, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for members %v (seen %+v): %v", want, seen, err)
		}
		seen = append(seen, ch)
		if slices.Equal(ch.Members, want) {
			return seen
		}
	}
}

// Members on three sessions of a real server join; a watcher on a fourth
// sees them; one member leaves, and another's session is closed (its
// ephemeral node goes): the watcher sees both leave, and its view ends
// equal to the server's children.
func TestRealMembership(t *testing.T) { realMembership(t, false) }

// TestRealMembership with every session under a chroot (realtest.Chroot).
func TestRealMembershipUnderRoot(t *testing.T) { realMembership(t, true) }

func realMembership(t *testing.T, underRoot bool) {
	zkserver.Require(t)
	srv := zkserver.Standalone(t, zkserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chroot := realtest.Chroot(t, ctx, srv.Addrs(), underRoot)
	dir := fmt.Sprintf("/real-group-%016x/members", rand.Uint64())

	wex := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{LogDetached: true, Root: chroot}).Ex
	wc, err := group.NewClient(wex, dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	waitMembers(t, ctx, w) // empty at first

	ids := []string{"a", "b", "c"}
	members := make([]*group.Member, len(ids))
	stops := make([]func(), len(ids))
	clients := make([]*group.Client, len(ids))
	for i, id := range ids {
		rc := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{LogDetached: true, Root: chroot})
		clients[i], _ = group.NewClient(rc.Ex, dir)
		stops[i] = rc.Stop
		if members[i], err = clients[i].Join(ctx, id, []byte("data-"+id)); err != nil {
			t.Fatal(err)
		}
	}
	waitMembers(t, ctx, w, "a", "b", "c")

	if err := clients[0].Leave(ctx, members[0]); err != nil {
		t.Fatal(err)
	}
	seen := waitMembers(t, ctx, w, "b", "c")
	if last := seen[len(seen)-1]; !slices.Equal(last.Removed, []string{"a"}) {
		t.Fatalf("leave of a reported as %+v", last)
	}

	// b's session is closed: the server deletes its node.
	stops[1]()
	<-members[1].Done()
	seen = waitMembers(t, ctx, w, "c")
	if last := seen[len(seen)-1]; !slices.Equal(last.Removed, []string{"b"}) {
		t.Fatalf("b's closed session reported as %+v", last)
	}

	// The view agrees with the server.
	if got := w.Members(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("view %v", got)
	}
	if err := clients[2].Leave(ctx, members[2]); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, ctx, w)
}

package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/task"
)

// largestPutIn bisects the largest data c.Put accepts; dir is the
// server's path of the queue directory (with any chroot).
func largestPutIn(t *testing.T, srv *fakezk.Server, c *queue.Client, dir string) int {
	t.Helper()
	bg := context.Background()
	lo, hi := 1, task.MaxDataSize
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		name, err := c.Put(bg, make([]byte, mid))
		switch {
		case err == nil:
			lo = mid
			if err := srv.AdminDelete(dir + "/" + name); err != nil {
				t.Fatal(err)
			}
		case errors.Is(err, task.ErrDataTooLarge):
			hi = mid
		default:
			t.Fatal(err)
		}
	}
	return lo
}

// doc.go: "Put: ErrDataTooLarge for data the queue's larger requests with
// the item could not carry (a few hundred bytes under the server's limit;
// PROTOCOL.md, Put), nothing sent." and at least once "No item whose Put
// succeeded is lost". The server's packet limit here is below the
// default (fakezk.Config.MaxPacketSize, zkadapter.Config.MaxPacketSize):
// checkSize compared against the constant task.MaxPacketSize, so Put
// accepted an item the take's move could never carry, and every Take
// failed at it (the small item behind it never taken). It now asks the
// connection (task.PacketRoom).
func TestLargestPutUnderASmallerPacketLimitIsTaken(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true, MaxPacketSize: 200000})
	defer srv.Close()
	c := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}), queue.WithMode(queue.AtLeastOnce))
	n := largestPutIn(t, srv, c, "/q")
	t.Logf("largest put accepted under a 200000-byte packet limit: %d bytes", n)
	takenBehindASmallOne(t, c, n)
}

// Same, under a chroot (fakezk.ConnConfig.Root, zkadapter.Config.Root):
// checkSize measured the paths without the root; the server sees them
// with it (four paths in the move multi).
func TestLargestPutUnderAChrootIsTaken(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	root := "/" + strings.Repeat("r", 200)
	if err := srv.AdminCreate(root, nil, 0); err != nil {
		t.Fatal(err)
	}
	c := runClient(t, srv, srv.Connect(fakezk.ConnConfig{Root: root}), queue.WithMode(queue.AtLeastOnce))
	n := largestPutIn(t, srv, c, root+"/q")
	t.Logf("largest put accepted under a %d-byte root: %d bytes", len(root), n)
	takenBehindASmallOne(t, c, n)
}

package zkadapter

import (
	"errors"
	"testing"

	"github.com/zkflow/zkflow/task"
)

// PacketRoom (task.PacketSizer) says what Do does: a request it gives
// room 0 is sent (here, unconnected, ErrNotSent), one byte more is
// refused with ErrDataTooLarge, nothing sent; the root counts in every
// path, and the limit is Config.MaxPacketSize.
func TestPacketRoomAgreesWithDo(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Root: "/a-root-of-some-length"},
		{Root: "/r", MaxPacketSize: 4096},
	} {
		cfg.Servers = []string{"127.0.0.1:1"}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		multi := func(n int) task.Request {
			return &task.MultiRequest{Ops: []task.MultiOp{
				&task.CheckRequest{Path: "/q.epoch", Version: 0},
				&task.CreateRequest{Path: "/q/qn-1", Data: make([]byte, n), Mode: task.Persistent, ACL: task.OpenACL},
				&task.DeleteRequest{Path: "/q.inflight/x", Version: 0},
			}}
		}
		room := c.PacketRoom(multi(0))
		if cfg.Root != "" && room != c.cfg.MaxPacketSize-packetSize(multi(0))-3*len(cfg.Root) {
			t.Errorf("root %q: room %d, want the root's length counted in each of the 3 paths", cfg.Root, room)
		}
		for _, tc := range []struct {
			n    int
			want error
		}{{room, task.ErrNotSent}, {room + 1, task.ErrDataTooLarge}} {
			if got := c.PacketRoom(multi(tc.n)); (got < 0) != (tc.want == task.ErrDataTooLarge) {
				t.Errorf("root %q, limit %d: %d bytes of data: room %d", cfg.Root, c.cfg.MaxPacketSize, tc.n, got)
			}
			var resp task.Response
			c.Do(multi(tc.n), func(r task.Response) { resp = r }, nil)
			if !errors.Is(resp.Err, tc.want) {
				t.Errorf("root %q, limit %d: Do with %d bytes of data: %v, want %v", cfg.Root, c.cfg.MaxPacketSize, tc.n, resp.Err, tc.want)
			}
		}
		c.Close()
	}
}

package zkadapter

import (
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// Config.MaxPacketSize may be set to the server's jute.maxbuffer, up to
// 1 GiB, apart from MaxDataSize; go-zookeeper's encode buffer stays at
// MaxDataSize plus 512 KiB (1.5 MiB by default). A getData whose path
// ends its body one byte past that buffer had its trailing Watch bool
// written out of range: go-zookeeper's encodePacket recovers only "slice
// bounds out of range" panics, so the process ended on go-zookeeper's
// send goroutine (this test panicked on the code before the fix). A
// request the buffer cannot hold now fails with ErrDataTooLarge, unsent.
func TestRequestOverTheEncodeBufferIsRefused(t *testing.T) {
	srv := zkserver.Standalone(t, serverOpts)
	c, r := open(t, Config{Servers: srv.Addrs(), SessionTimeout: 4 * time.Second, MaxPacketSize: 2 << 20})
	// The body gets go-zookeeper's 1.5 MiB buffer less the frame length
	// (4) and the request header (8); pathWatchRequest is 4+len(path) then
	// the bool.
	const body = 1536*1024 - 12
	path := "/" + strings.Repeat("a", body-4-1)
	req := &task.GetDataRequest{Path: path}
	if n := packetSize(req); n > 2<<20 {
		t.Fatalf("packet %d over the limit", n)
	}
	mustErr(t, do(t, c, r, req, nil), task.ErrDataTooLarge)
}

package zkadapter

import (
	"runtime"
	"testing"
	"time"
)

// openBytes returns the bytes allocated while a Conn with cfg opens (to a
// port where nothing answers) and closes: the least of three tries, so
// that what another goroutine allocates meanwhile does not count.
func openBytes(t testing.TB, cfg Config) uint64 {
	least := uint64(1 << 62)
	for range 3 {
		least = min(least, openBytesOnce(t, cfg))
	}
	return least
}

func openBytesOnce(t testing.TB, cfg Config) uint64 {
	cfg.Servers = []string{"127.0.0.1:1"}
	cfg.ConnectTimeout = 50 * time.Millisecond
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.open(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestOpenAllocatesOneEncodeBuffer: go-zookeeper allocates its encode
// buffer (1.5 MiB) when it connects; the Conn asks for a larger one only
// when MaxDataSize needs it, so that a Conn at the default limit does not
// allocate the buffer twice.
func TestOpenAllocatesOneEncodeBuffer(t *testing.T) {
	const mib = 1 << 20
	if got := openBytes(t, Config{}); got > 2*mib {
		t.Errorf("opening a Conn at the default MaxDataSize allocated %.2f MiB, want one 1.5 MiB buffer and little else", float64(got)/mib)
	}
	// A larger limit gets a larger buffer (1.5 MiB, then MaxDataSize +
	// 512 KiB).
	if got := openBytes(t, Config{MaxDataSize: 4 * mib, MaxPacketSize: 5 * mib}); got < 6*mib {
		t.Errorf("opening a Conn with MaxDataSize 4 MiB allocated %.2f MiB, want a 4.5 MiB encode buffer besides the default one", float64(got)/mib)
	}
}

// BenchmarkOpen: a Conn opened (to a port where nothing answers) and
// closed; B/op is what a Conn costs before it has a session.
func BenchmarkOpen(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		c, err := New(Config{Servers: []string{"127.0.0.1:1"}, ConnectTimeout: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.open(); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

package netproxy_test

import (
	"bytes"
	"io"
	"slices"
	"testing"
	"time"
)

// TestDelaySubMillisecond: a delay shorter than a millisecond is kept,
// not rounded up. Of many one-byte round trips through an echo server
// with 500µs each way, every one takes at least 1ms, and on an unloaded
// machine the median a few tens of microseconds more. Runtime timers
// (time.Sleep, time.Timer) wake about a millisecond late here when the
// process is otherwise idle, which made every round trip, the fastest
// included, more than 2ms. The bound (700µs of scheduling noise) holds the
// tenth percentile, not the median: with other test binaries on the cores
// (make unit runs four at once on two) the median measures the machine's
// load (2.8ms once), while the fastest tenth still shows whether the delay
// is rounded up.
func TestDelaySubMillisecond(t *testing.T) {
	const d = 500 * time.Microsecond
	p := newProxy(t, newEcho(t))
	p.Delay(d)
	c := dial(t, p.Addr())
	send(t, c, c, "warm")
	var rtts []time.Duration
	buf := make([]byte, 1)
	for i := range 200 {
		start := time.Now()
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(bound))
		if _, err := io.ReadFull(c, buf); err != nil || buf[0] != byte(i) {
			t.Fatalf("round trip %d: %v, read %d", i, err, buf[0])
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	if rtts[0] < 2*d {
		t.Errorf("fastest round trip %v, want at least %v", rtts[0], 2*d)
	}
	if p10 := rtts[len(rtts)/10]; p10 > 2*d+700*time.Microsecond {
		t.Errorf("tenth percentile of the round trips %v with %v each way (fastest %v, median %v, slowest %v)", p10, d, rtts[0], rtts[len(rtts)/2], rtts[len(rtts)-1])
	}
	t.Logf("round trips with %v each way: fastest %v, p10 %v, median %v, p90 %v", d, rtts[0], rtts[len(rtts)/10], rtts[len(rtts)/2], rtts[len(rtts)*9/10])
}

// TestDelayLine: the delay is a latency, not a bandwidth cap. 8 MiB
// streamed one way through a 20ms delay arrive, in order, in far less than
// one delay per chunk: at least 256 chunks (a read takes 32 KiB at most)
// would take 5.1s if each waited its own delay after the last, so the
// bound is half that. It was 25 delays (500ms): 8 MiB under -race while
// make unit ran other test binaries on both cores once took 548ms, the
// machine's load and not the delay line's.
func TestDelayLine(t *testing.T) {
	const d = 20 * time.Millisecond
	s := newServer(t)
	p := newProxy(t, s.addr())
	c := dial(t, p.Addr())
	sc := s.accept(t)
	send(t, c, sc, "warm")
	p.Delay(d)
	msg := make([]byte, 8<<20)
	for i := range msg {
		msg[i] = byte(i * 7 / 5)
	}
	start := time.Now()
	errc := make(chan error, 1)
	go func() { _, err := c.Write(msg); errc <- err }()
	got := make([]byte, len(msg))
	sc.SetReadDeadline(time.Now().Add(bound))
	if _, err := io.ReadFull(sc, got); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the stream arrived changed or out of order")
	}
	chunks := time.Duration(len(msg) / (32 << 10))
	if took < d || took > chunks*d/2 {
		t.Errorf("8 MiB through a %v delay took %v, want at least the delay and far less than a delay per chunk", d, took)
	}
	t.Logf("8 MiB through a %v delay in %v", d, took)
}

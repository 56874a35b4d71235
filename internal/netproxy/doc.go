// Package netproxy is a TCP proxy on loopback that makes network faults
// happen exactly when a test says: a black-hole partition (Silence), an
// abrupt cut (Reset) and a one-way delay (Delay). It sits between a
// client and a real server, for instance between a ZooKeeper client and
// each server of an ensemble, so that a test can partition a server
// without killing it.
//
// The guarantee: once Silence has returned, no byte written by either
// peer is delivered to the other, and neither peer receives a FIN or an
// RST from the proxy, until Reset or Close. Both connections stay open; a
// read waits until its own deadline. Bytes already on their way (read by
// the proxy before Silence) may still arrive, so a test that needs
// nothing in flight does a round trip first.
//
//	p, err := netproxy.New(serverAddr)
//	if err != nil { ... }
//	defer p.Close()
//	conn, err := net.Dial("tcp", p.Addr()) // the client talks to p.Addr()
//	...
//	p.Silence() // partition: conn stays open, nothing passes either way
//	p.Open()    // heal: new connections pass; conn stays dead
//
// # The model of a partition
//
// A partition loses packets; it does not announce itself. Silence models
// that as follows.
//
//   - The proxy stops reading from both peers. What a peer writes stays
//     unread in the proxy's receive buffer and then in the peer's send
//     buffer, so a peer that keeps writing eventually blocks, as it would
//     in a real partition. (The proxy's kernel still acknowledges what
//     fits in its receive buffer, so the peer's TCP never times out a
//     write on its own; on loopback that is a few hundred kilobytes to a
//     few megabytes.)
//   - Bytes the proxy had read but not yet written (a delayed chunk, say)
//     are dropped, never delivered later: a partition loses packets in
//     flight, and a connection that had lost bytes could not be resumed
//     without corrupting its stream.
//   - A silenced connection is never resumed. It also does not end when
//     a peer closes it: the FIN or RST would have to cross the partition,
//     and the proxy, which no longer reads, does not see it. It ends only
//     with Reset, ResetSilenced or Close, and it counts in Conns until
//     then.
//   - A connection accepted while silent completes its TCP handshake (the
//     listener accepts) but the proxy does not dial the target: the server
//     never hears of it. It is silenced from the start, as above.
//
// Open undoes Silence for connections accepted after it. A client sees a
// healed partition the way it would on a real network: its old connection
// is dead, its own timeout fires, and it reconnects. A test that wants the
// old connections to fail at once calls Reset as well, or ResetSilenced
// after Open, which ends only the connections the partition silenced.
//
// Reset closes every current connection, on both sides, with an RST
// (SO_LINGER 0): what a client sees when a server crashes or a middlebox
// drops its state. It does not change whether new connections pass. When
// the target refuses the proxy's dial, the accepted connection is reset
// the same way, which is the closest the proxy can come to "connection
// refused".
//
// Delay(d) adds d to every chunk in each direction: a chunk read at time t
// is written at t+d, or later if the chunk before it is still being
// written. The byte stream and its order are preserved, and a FIN is
// delayed like the data before it. Changing the delay affects chunks read
// after the change. Each direction is a delay line: the reader goes on
// reading while earlier chunks wait, so a delay adds latency without
// capping bandwidth (but see Cost). Delays below a millisecond are kept:
// the last 2ms of a wait are slept on the thread, because the runtime's
// timers can wake a millisecond late (on loopback, 500µs each way gives
// round trips of about 1.2ms).
//
// # Cost
//
// Each forwarded connection costs five goroutines (one that dials, and a
// reader and a writer per direction) and a 32 KiB read buffer per
// direction. Each chunk is copied once more than on a direct connection
// (into a slice of its own, so that the reader can go on reading while
// the writer waits), and handed from the reader's goroutine to the
// writer's. Up to 4 MiB per direction may be queued in the proxy, which
// bounds throughput under a delay d to 4 MiB/d per connection. A writer
// whose chunk is due within 2ms blocks its thread until then, so with
// many delayed connections the process runs as many threads. A silenced
// connection costs no goroutine, only its open sockets.
//
// The proxy works on the real clock, as the sockets do: Delay is wall
// time, and deadlines set by the proxy are real ones.
//
// Start reading at New and Proxy; link.go holds one connection's
// forwarding.
package netproxy

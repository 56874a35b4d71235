// Package zkadapter implements task.Conn over github.com/go-zookeeper/zk
// v1.0.4: the runtime's asynchronous operations and ordered event stream
// on top of a client that has only blocking calls, a lossy event channel
// and a habit of opening a new session silently after an expiry.
//
// Start reading at Dial (or New + Connect), then Conn.Do and session.go.
//
// # Callbacks: which goroutine, what order, how many times
//
// Every callback of a Conn (the events function given to Start, and the
// done and watch functions given to Do) is made on the goroutine where its
// cause was learnt: go-zookeeper's receive goroutine for a reply or a
// notification, its connection goroutine for a session change and the
// outcomes it decides (a connection lost, an expiry), the caller's for a
// Do refused at once (possibly before Do returns) and for Close. They are
// made under the Conn's lock: one at a time, never concurrently, in the
// order the session observed their causes; nothing is queued, so nothing
// waits for a goroutine to wake and nothing is dropped. Session events of
// Connect, before Start, are kept and made by Start, first. Callbacks must
// not block (they hold up go-zookeeper's receive goroutine) and must not
// call back into the Conn. After Close has returned, a Do completes at
// once on the caller's goroutine with task.ErrClosed.
//
//   - events: StateConnected (SessionID and the negotiated Timeout) when a
//     session is usable (go-zookeeper's StateHasSession), StateSuspended
//     when the connection drops, StateExpired when the session is gone and
//     then StateConnected with the new session, StateClosed once, last.
//     go-zookeeper's StateConnecting and StateConnected (a TCP connection
//     without a session) are not reported. A change of session id without
//     an expiry seen first is reported as StateExpired anyway: the runtime
//     never sees a silent switch.
//   - done: exactly once per Do.
//   - watch: at most once per Do; exactly once when the watch was set (the
//     request succeeded, or exists failed with ErrNoNode): the node event,
//     or EventNotWatching with State Expired (queued right after the
//     StateExpired event) or Closed (during Close, before StateClosed).
//
// # Connecting: what Dial promises
//
// Dial returns once a session is established, or, when its context ends
// first, within about a second of that (Close's bound, below) with an
// error wrapping ErrNoSession, the context's error and the last attempt's
// cause: a *net.DNSError for a name that does not resolve (names are
// resolved by each attempt, under its deadline), a *net.OpError for a
// closed port, "not a ZooKeeper server" for something that answers in
// another protocol, "the server closed the connection" for one that
// refuses, "no connect response" for one that accepts and says nothing, a
// TLS error naming the certificate problem. An invalid Config fails at
// once with ErrInvalidConfig (a *ConfigError naming the field). Each
// attempt is bounded: the TCP connect (and TLS handshake) by
// ConnectTimeout, the ZooKeeper handshake by the session timeout divided
// by the number of servers, as ZooKeeper's own client does; then the next
// server is tried.
//
// On an established connection the client gives a silent server up
// two-thirds of the session timeout after it last heard from it (pings go
// out every third of it) and moves to the next server, so with a healthy
// quorum reachable one silent member never costs the session.
//
// Close returns within about a second whatever the servers do: with a
// usable session it asks the server to close it (its ephemerals go) and
// waits up to a second for the answer; without one it closes the
// connection at once. executor.Run, which closes its Conn, returns as
// soon after its context ends.
//
// # Sessions, connections, and the guard on every request
//
// The Conn counts sessions (a generation bumped on every expiry) and
// numbers connections. A request is handed to go-zookeeper only while a
// session is usable (checked in Do and again by the sender); otherwise it
// completes with task.ErrNotSent. A request made on one connection is
// never written on another: its body is encoded by go-zookeeper's send
// loop right before the write, and the Conn's encoder (guarded) refuses
// when the connection is not the one the request was made on, so
// go-zookeeper fails it unwritten (task.ErrNotSent). go-zookeeper keeps
// requests queued across a reconnect, and after an expiry opens the next
// session with them still queued; without the guard the server would apply
// them for a session that never made them (an ephemeral owned by a live
// session nobody will delete). When a session expires, every request still
// pending from it completes with task.ErrSessionExpired at once (between
// StateExpired and the next StateConnected), and whatever go-zookeeper
// later says about it is dropped.
//
// Every connection starts with a prelude the Conn sends before any request
// made on it: Config.Auth's credentials, then, when the session had
// watches, SetWatches requests (128 KiB each) that set them again with the
// last zxid the session saw, and SetWatches2 requests for its persistent
// watches (addWatch; ZooKeeper sends no event for those). The server
// handles a session's requests in
// order, so a change that happened while the client was away is notified
// before any reply that shows it, however many watches there are.
// addWatch (106), removeWatches (18) and SetWatches2 (105), which
// go-zookeeper v1.0.4 lacks, travel the same path as every request
// (pwatch.go); their notifications arrive as any other, through
// go-zookeeper's event callback, in wire order.
//
// # Chroot, credentials, TLS
//
// Config.Root puts every path under a root node and takes it off every
// path handed back (ParseConnectString reads "host:port,.../app").
// Config.Auth's credentials (digest "user:password") are presented on
// every connection; TLS (Config.TLS) wraps every connection, with the
// server name defaulting to each address's host.
//
// # After the ensemble loses its data
//
// A server refuses (closes the connection at the handshake) a client that
// has seen a later zxid than its own, which is every client once every
// server restarted with an empty data directory; a server that is not
// serving looks the same on the wire. Once no server has accepted the
// session for longer than its timeout and the last attempt was refused,
// the Conn waives its zxid: it presents its session with lastZxidSeen 0.
// Servers that lost their data do not know the session either and say it
// expired: the executor sees StateExpired and then StateConnected with a
// new session, as after any expiry, and recipes rebuild. Servers that were
// only without a quorum resume the session when they serve again (the
// Conn syncs first: the server it reached may be behind what the session
// saw). The session ends only when a server says so, so StateExpired
// still means its ephemerals are gone.
//
// # Errors
//
// Response.Err is nil or a bare task sentinel (compare with ==, as the task
// package does): server codes become task's Codes, which keep unknown
// codes' numbers (go-zookeeper's own error values, and its "unknown
// error: N", are mapped back to codes too); zk.ErrConnectionClosed or a raw network error for a request
// in flight becomes task.ErrConnectionLoss (outcome unknown); zk.ErrNoServer
// (still queued when every server failed) becomes task.ErrNotSent;
// zk.ErrSessionExpired becomes task.ErrSessionExpired; requests pending at
// Close get task.ErrClosed. Requests are checked with task.Validate first,
// so bad paths, modes and sizes get task.ErrInvalidPath,
// task.ErrInvalidArgument or task.ErrDataTooLarge and are never sent; so
// are requests longer on the wire than the server's jute.maxbuffer
// (Config.MaxPacketSize, 0xfffff bytes by default), which a server answers
// by closing the connection: data of task.MaxDataSize (1 MiB) is over it
// once the path and ACL are counted.
//
// # How requests travel, and the orders kept
//
// go-zookeeper v1.0.4 exports only blocking calls, which would need a
// goroutine per request and lose every order (the goroutines reach its
// send queue, and wake up with their replies, in any order), and it sends
// creates without asking for their Stat. So the Conn uses go-zookeeper's
// own request path underneath its blocking calls (wire.go, reached with
// go:linkname; go.mod pins v1.0.4). Do puts the request on go-zookeeper's
// send queue itself, on the caller's goroutine (the executor's), when
// that queue has room and nothing waits before the request; otherwise the
// request joins an unbounded spill queue, which one sender goroutine
// hands to go-zookeeper in order (it may wait there while the connection
// is slow or down; Do never does, and spills while the sender holds a
// request, so Do order holds). go-zookeeper writes them in that order;
// the server answers one session in order; go-zookeeper's receive
// goroutine decodes each reply and calls the Conn back synchronously (one
// function for every request, which finds the request through its body),
// and also calls the event callback synchronously for each notification,
// so the Conn completes requests and fires watches in exactly the order
// they arrived on the wire (zxid order, a notification before the reply of
// the write that caused it, as ZooKeeper sends them). Outcomes decided
// without a reply are decided without a goroutine of their own: a request
// go-zookeeper will not write (held past its connection, or one it cannot
// encode) is completed as the send loop drops it; and when a connection
// ends (go-zookeeper reports StateDisconnected once its send and receive
// loops for it have returned, so no reply can follow), every request
// still pending completes, in Do order, with task.ErrConnectionLoss if
// the send loop had encoded it and task.ErrNotSent if not. One goroutine
// per Conn beside go-zookeeper's, idle unless requests spill; a request
// crosses no goroutine of the Conn on its way out or back.
//
// The Conn keeps its own registry of watches, filled from the replies on
// the receive goroutine and fired from the notifications that follow,
// with ZooKeeper's client rules (NodeCreated fires exist watches,
// NodeDataChanged data and exist watches, NodeChildrenChanged child
// watches, NodeDeleted all three), and sets them again itself after a
// reconnect (SetWatches, in the connection's prelude; a failure is logged
// at Error level: such watches would never fire until the session ends).
// go-zookeeper is not told of them, so its own re-registration, which would
// race the Conn's requests, sends nothing.
//
// What is left unordered: outcomes decided without a reply (connection
// loss right after StateSuspended, in Do order), and session events relative
// to replies only as go-zookeeper emits them (StateSuspended after every
// reply read before the connection broke).
//
// Other facts of ZooKeeper 3.8 the Conn passes on as they are: a plain
// create inside a multi is answered as a create (its name, no Stat), while
// container and TTL creates in a multi carry their Stat; a container's or
// TTL node's ephemeralOwner is shown to clients as 0. go-zookeeper has no
// per-request timeout (deadlines belong to the executor, which drops late
// results).
//
// # Benchmark
//
// BenchmarkPipelined (bench_test.go) starts one standalone server (full
// JIT, warmed up by 128,000 reads) and compares, each on a session of its
// own, 64 operations kept outstanding: raw is go-zookeeper's blocking API
// from 64 goroutines; conn is this Conn driven by a goroutine that issues
// the next request on every completion; executor is 64 executor flows,
// each resubmitting a task.Get (task.Set) of 64 bytes from its
// continuation, through executor.Run over this Conn. The contenders
// alternate, three rounds each, in one run:
//
//	go test -run '^$' -bench Pipelined -benchtime 20000x -count 1 ./zkadapter
//
// Figures of 2026-11-24 15:55 UTC, after the hand-offs were removed from
// the request path (ZooKeeper 3.8.0 from Debian 12, OpenJDK 17, Go 1.26,
// loopback, tmpfs with forceSync=no, a 2-vCPU VM shared by the server, the
// client and other jobs: load average 2 to 3), µs per operation, median of
// three rounds [min-max]:
//
//	          raw               conn              executor
//	getData   26.9 [26.1-44.4]  32.6 [30.7-42.1]  28.5 [25.8-31.1]
//	setData   37.3 [35.8-46.7]  37.6 [36.6-51.5]  40.1 [38.0-45.7]
//
// The spread of each contender's rounds is larger than the differences
// between contenders: on this machine the pipelined figures say no more
// than that none of them is consistently ahead. Rerun on a quiet machine
// for figures worth comparing across changes (the performance issue's
// harness does, with A/B pairs).
//
// BenchmarkSerial is the latency one client sees: one request at a time,
// each sent after the last one's reply, so every goroutine hand-off
// between the caller and the wire counts in full (raw: go-zookeeper's
// blocking calls; executor: executor.Await of the same operations):
//
//	ZK_REQUIRED=1 go test -run '^$' -bench Serial -benchtime 3000x ./zkadapter
//
// Figures of 2026-11-24 15:56 UTC (same machine, load average 3.4), µs
// per operation, eight rounds each (two runs of -count 2), in the order
// measured:
//
//	                                   raw                         executor
//	getData                            63, 147, 233, 217,          206, 189, 220, 87,
//	                                   60, 61, 61, 225             68, 72, 194, 188
//	ephemeral-sequential create+delete 184, 113, 115, 256,         130, 129, 279, 284,
//	                                   318, 288, 284, 278          214, 138, 123, 125
//
// The server answers a lone request in about 60 µs or about 200 µs,
// switching between the two for seconds at a time (its JIT and the
// machine's other jobs), which is most of what a single client waits for.
// Where both sides ran in the fast phase one after the other (60 and 61
// µs raw, 68 and 72 µs through the executor) a read one at a time through
// the executor takes about 12% longer: a blocking caller wakes the
// executor's goroutine and is woken by it, two goroutine hand-offs that a
// blocking call into go-zookeeper does not make. The Conn itself adds none
// any more (conn in the pipelined table). Writes are within the noise.
package zkadapter

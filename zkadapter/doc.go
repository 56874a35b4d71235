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
// done and watch functions given to Do) runs on one delivery goroutine
// owned by the Conn, one at a time, in the order the Conn queued them.
// The queue is unbounded: go-zookeeper's goroutines push onto it and never
// block, and nothing is dropped. Callbacks must not block and must not call
// back into the Conn. After Close has returned, a Do completes at once on
// the caller's goroutine with task.ErrClosed.
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
// # Sessions and the gate on session id
//
// The Conn counts sessions (a generation bumped on every expiry). A request
// is handed to go-zookeeper only while a session is usable; otherwise it
// completes with task.ErrNotSent and is certainly not applied: go-zookeeper
// would queue it and, after an expiry, send it on the new session. When a
// session expires, every request still pending from it completes with
// task.ErrSessionExpired at once (between StateExpired and the next
// StateConnected), and whatever go-zookeeper later says about it is
// dropped. The one window left: a request handed over in the instant
// between the connection breaking and go-zookeeper noticing, if the next
// connection then finds the session expired, may be applied by the server
// on the new session although it completes with ErrSessionExpired. This
// needs a dead connection that go-zookeeper notices later than the server
// expires the session, which its receive timeout (2/3 of the session
// timeout) makes unlikely, but not impossible; go-zookeeper has no hook to
// close it.
//
// # Errors
//
// Response.Err is nil or a bare task sentinel (compare with ==, as the task
// package does): go-zookeeper's server-code errors become task's Codes
// (unknown codes, which it formats as "unknown error: N", keep N as a
// task.Code); zk.ErrConnectionClosed or a raw network error for a request
// in flight becomes task.ErrConnectionLoss (outcome unknown); zk.ErrNoServer
// (still queued when every server failed) becomes task.ErrNotSent;
// zk.ErrSessionExpired becomes task.ErrSessionExpired; requests pending at
// Close get task.ErrClosed. Requests are checked with task.Validate first,
// so bad paths, modes and sizes get task.ErrInvalidPath,
// task.ErrInvalidArgument or task.ErrDataTooLarge and are never sent.
//
// # Concurrency model, and the orders go-zookeeper cannot keep
//
// go-zookeeper has no asynchronous call, so each Do runs its blocking call
// on a goroutine of its own. This is the choice over a bounded worker pool:
// go-zookeeper pipelines concurrent calls internally (a send queue of 16
// and a map of requests in flight), so a pool would only cap the pipeline
// depth and add a queue whose wait is invisible to deadlines; the
// goroutines cost ~4 KiB each while a request is in flight, and the
// executor bounds how many flows are in flight anyway. Close waits for all
// of them (go-zookeeper fails every pending call when it closes).
//
// Because the calls run on separate goroutines, go-zookeeper does not keep
// these orders, and the runtime and recipes must not depend on them:
//
//   - two Do calls issued back to back may be sent to the server in either
//     order; a chain that needs A applied before B waits for A's done (as
//     every task chain does), or uses a multi;
//   - completions of different requests, and watch notifications of
//     different watches, are delivered in the order their goroutines wake
//     up, not in zxid order; only "a watch's notification comes after the
//     done of the request that set it" is kept (the watch goroutine starts
//     from that done);
//   - session events are in order among themselves (they come from
//     go-zookeeper's single connection loop), but a completion or
//     notification that the server sent before a disconnect can be
//     delivered after StateSuspended.
//
// Other limits of go-zookeeper v1.0.4 the Conn passes on: a create returns
// no Stat (it sends create, not create2), so Response.Stat of a create and
// MultiResult.Stat of a create op are zero; creates inside a multi are sent
// as plain creates with the mode's flags (no createContainer or createTTL
// op in a multi); watches are restored after a reconnect by go-zookeeper's
// SetWatches, which only logs a failure (the Conn logs it at Error level);
// go-zookeeper has no per-request timeout (deadlines belong to the
// executor, which drops late results).
//
// # Benchmark
//
// BenchmarkPipelined compares, on one standalone server started by the
// benchmark, 64 operations kept outstanding on one session by the raw
// go-zookeeper client (64 goroutines), by this Conn alone (a driver
// reissuing from done), and by executor flows over this Conn. Command and
// figures (go1.26, 3.8.0 server on tmpfs, forceSync=no, loopback, 4 CPUs
// per `nproc`), ns per operation:
//
//	go test -run '^$' -bench Pipelined -benchtime 20000x -count 3 ./zkadapter
//
// See bench_test.go for the figures recorded at the last run.
package zkadapter

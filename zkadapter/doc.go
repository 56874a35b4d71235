// Package zkadapter implements task.Conn over github.com/go-zookeeper/zk
// v1.0.4: the runtime's asynchronous operations and ordered event stream
// on top of a client that has only blocking calls, a lossy event channel
// and a habit of opening a new session silently after an expiry. It is
// how an executor talks to a real ZooKeeper ensemble.
//
//	conn, err := zkadapter.Dial(ctx, zkadapter.Config{
//		Servers:        []string{"zk1:2181", "zk2:2181", "zk3:2181"},
//		SessionTimeout: 10 * time.Second,
//	})
//	if err != nil {
//		return err // wraps ErrNoSession and the last attempt's cause
//	}
//	ex, err := executor.New(executor.Config{Conn: conn})
//	go ex.Run(ctx) // closes conn when ctx ends
//
// Guarantees. Every session change is reported, in order, and none is
// silent: a change of session id without an expiry seen first is reported
// as StateExpired anyway. A request made on one connection is never
// written on another, and a request of a session that expired is never
// applied for the next one: it completes with task.ErrSessionExpired. done
// runs exactly once per request; a watch at most once, and exactly once
// when it was set (the node event, or EventNotWatching when the session
// ends). Nothing is dropped or queued: callbacks run one at a time, in the
// order the session observed their causes, on the goroutine that learnt
// them. After a reconnect the session's watches are set again before any
// request, so a change made while the client was away is notified before
// any reply that shows it.
//
// Dial returns once a session is established, or, when its context ends
// first (or Config.DialTimeout passes, for a context with no deadline),
// within about a second of that with an error wrapping ErrNoSession, the
// context's error and the last attempt's cause (a *net.DNSError for a
// name that does not resolve, a *net.OpError for a closed port,
// ErrNotZooKeeper for an endpoint that answers as another service does,
// such as an HTTP reply or an SSH banner, or with a connect response no
// ZooKeeper sends, "no connect response" for one that says nothing, a
// TLS error). An invalid Config fails at once with ErrInvalidConfig (a
// *ConfigError naming the field, such as a credential or a size limit the
// server could never accept). Each attempt is bounded (ConnectTimeout,
// then the session timeout divided by the number of servers, and by two
// for one server), and a silent server is given up two-thirds of the
// session timeout after the last ping it answered was sent (notifications
// read meanwhile do not count: the server heard nothing from them). Close
// returns within about a second whatever the servers do.
//
// Config.Root puts every path under a root node (ParseConnectString reads
// "host:port,.../app"); Config.Auth's credentials are presented on every
// connection; Config.TLS wraps every connection. Errors are task's
// sentinels: a request in flight when the connection drops gets
// task.ErrConnectionLoss (outcome unknown), one never sent
// task.ErrNotSent; bad paths, modes and sizes are refused before sending
// (task.ErrInvalidPath, task.ErrInvalidArgument, task.ErrDataTooLarge;
// sizes against Config.MaxPacketSize, the server's jute.maxbuffer, which
// also bounds the requests that set watches again). If
// every server of the ensemble loses its data, the Conn waits out a
// session timeout of refusals, then learns its session expired and starts
// a new one, as after any expiry.
//
// The callback rules in full, the request guard, the error mapping, how
// requests travel and the measured figures: zkadapter/PROTOCOL.md.
package zkadapter
